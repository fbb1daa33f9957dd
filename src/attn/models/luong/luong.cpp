#include "attn/models/luong/luong.h"

#include <cmath>
#include <stdexcept>

#include "attn/attention/additive_step.h"
#include "attn/attention/attention.h"
#include "attn/autograd/ops_sequence.h"
#include "attn/models/model_parts.h"
#include "attn/models/luong/luong_decoder.h"
#include "attn/models/luong/luong_search.h"
#include "attn/models/output_loss.h"

namespace attn::models {

Luong::Luong(const ModelConfig& c, Rng& rng, uint64_t dropout_seed)
    : RnnTextModel(c, dropout_seed, "luong"), cfg_(detail::own_section<LuongConfig>(config_, "Luong", "luong")) {
  validate(c);
  const int64_t E = c.embed, Dv = cfg_.encoder_hidden * (cfg_.bidirectional ? 2 : 1), Hd = cfg_.decoder_hidden,
                A = cfg_.attention, L = cfg_.decoder_layers;
  make_embeddings(rng);
  nn::RnnOptions enc;
  enc.input_size = E;
  enc.hidden_size = cfg_.encoder_hidden;
  enc.num_layers = cfg_.encoder_layers;
  enc.bidirectional = cfg_.bidirectional;
  enc.dropout = 0.0f;  // between layers: applied by detail::run_encoder with the model's dropout Rng
  nn::RnnOptions dec;
  dec.input_size = E + Hd;  // input feeding: [E y_{t-1}; h̃_{t-1}]
  dec.hidden_size = Hd;
  dec.num_layers = L;
  if (lstm()) {
    enc_lstm_ = register_module("encoder", std::make_shared<nn::LSTM>(enc, rng));
  } else {
    enc_gru_ = register_module("encoder", std::make_shared<nn::GRU>(enc, rng));
  }
  if (cfg_.decoder_init != DecoderInit::Zero)
    init_ = register_module("init", std::make_shared<nn::Linear>(Dv, Hd, true, rng));
  if (lstm())
    dec_lstm_ = register_module("decoder", std::make_shared<nn::LSTM>(dec, rng));
  else
    dec_gru_ = register_module("decoder", std::make_shared<nn::GRU>(dec, rng));
  switch (cfg_.score) {
    case LuongScore::Dot: break;
    case LuongScore::General: general_w_ = register_parameter("attention.W", detail::uniform_param({Hd, Dv}, Dv, rng)); break;
    case LuongScore::Concat:
      concat_q_ = register_parameter("attention.query.weight", detail::uniform_param({A, Hd}, Hd + Dv, rng));
      concat_k_ = register_parameter("attention.key.weight", detail::uniform_param({A, Dv}, Hd + Dv, rng));
      concat_v_ = register_parameter("attention.v", detail::uniform_param({A}, A, rng));
      break;
  }
  if (cfg_.window == LuongWindow::LocalP) {
    local_wp_ = register_parameter("attention.local.Wp", detail::uniform_param({A, Hd}, Hd, rng));
    local_vp_ = register_parameter("attention.local.vp", detail::uniform_param({A}, A, rng));
  }
  combine_ = register_module("combine", std::make_shared<nn::Linear>(Dv + Hd, Hd, false, rng));
  make_output(Hd, rng);  // W_s [V, Hd], b [V]
}

Tensor Luong::feed(const DecoderState& s) const { return s.live(luong_state::kFeed); }

Encoded Luong::encode(const Tensor& src, const std::vector<int64_t>& lengths) const {
  detail::check_source("luong", src, lengths, config_.src_vocab);
  const int64_t B = src.size(0), Hd = cfg_.decoder_hidden, L = cfg_.decoder_layers;
  Tensor emb = drop(src_embed_->forward(src));  // [B, S, E]
  const nn::RnnStack& stack = lstm() ? static_cast<const nn::RnnStack&>(*enc_lstm_) : *enc_gru_;
  Tensor out = detail::run_encoder(stack, lstm(), emb, lengths, float(config_.dropout), is_training(), dropout_rng_)
                   .output;  // [B, S, Dv]
  Encoded e;
  e.memory.values() = out;
  e.memory.lengths() = detail::lengths_tensor(lengths);
  switch (cfg_.score) {
    case LuongScore::Dot: e.memory.keys() = out; break;
    case LuongScore::General:  // W_a h̄_s / sqrt(Hd) [B, S, Hd] (luong.h: why the scale)
      e.memory.keys() = affine(linear(out, general_w_, Tensor()), 1.0f / std::sqrt(float(cfg_.decoder_hidden)));
      break;
    case LuongScore::Concat: e.memory.keys() = attention::project_keys(out, concat_k_, Tensor()); break;  // [B, S, A]
  }
  Tensor h0 = init_ ? tanh(init_->forward(detail::mean_over_valid(out, lengths))) : Tensor::zeros({B, Hd});
  e.state = DecoderState(B, B);
  for (int64_t l = 0; l < L; ++l) {
    e.state.set(luong_state::h(l), h0);
    if (lstm()) e.state.set(luong_state::c(l), Tensor::zeros({B, Hd}));
  }
  e.state.set(luong_state::kFeed, Tensor::zeros({B, Hd}));  // h̃_0
  return e;
}

Luong::StepResult Luong::decoder_step(const EncoderMemory& m, const Tensor& emb, const DecoderState& s, int64_t t,
                                      bool need_internals) const {
  const int64_t N = emb.size(0), L = cfg_.decoder_layers, Hd = cfg_.decoder_hidden, S = m.values().size(1),
                Dv = m.values().size(2);
  const std::vector<int64_t> ones(size_t(N), 1);
  StepResult r;
  r.state = DecoderState(N, N);
  // h_t = stacked cell([E y_{t-1}; h̃_{t-1}], h_{t-1})
  Tensor x = concat({emb, feed(s)}, 1), h;
  for (int64_t l = 0; l < L; ++l) {
    Tensor x3 = reshape(x, {N, 1, x.size(1)});
    if (lstm()) {
      LstmResult y = attn::lstm(x3, ones, s.live(luong_state::h(l)), s.live(luong_state::c(l)),
                                dec_lstm_->weights(l, 0));
      h = y.h_n;
      r.state.set(luong_state::c(l), y.c_n);
    } else {
      h = gru(x3, ones, s.live(luong_state::h(l)), dec_gru_->weights(l, 0)).h_n;
    }
    r.state.set(luong_state::h(l), h);
    x = h;
    if (l + 1 < L) x = drop(x);
  }
  // h = h_t [N, Hd], the top layer's
  Tensor context;
  if (cfg_.score == LuongScore::Concat) {
    // v_a^T tanh(W_a [h_t; h̄_s]) = v_a^T tanh(W_q h_t + W_k h̄_s): the fused additive step
    attention::AdditiveStepOutput a =
        attention::additive_step(h, m.keys(), m.values(), concat_q_, concat_v_, m.lengths(), need_internals);
    context = a.context;
    r.weights = a.weights;
    r.internals.add(internal::kScores, a.scores);
  } else {
    attention::AttentionOptions o;
    o.mask.key_lengths = m.lengths();
    o.need_weights = true;
    o.need_scores = need_internals;
    if (cfg_.window == LuongWindow::LocalM) {
      o.local.window = attention::Window::LocalMonotonic;
      o.local.half_width = cfg_.window_half_width;
      o.local.position_offset = t;  // p_t = t
    } else if (cfg_.window == LuongWindow::LocalP) {
      o.local.window = attention::Window::LocalPredictive;
      o.local.half_width = cfg_.window_half_width;
      o.local.Wp = local_wp_;
      o.local.vp = local_vp_;
    }
    const int64_t K = m.keys().size(2);
    attention::AttentionOutput a = attention::attention(reshape(h, {N, 1, 1, Hd}), reshape(m.keys(), {N, 1, S, K}),
                                                        reshape(m.values(), {N, 1, S, Dv}), attention::Dot{}, o);
    context = reshape(a.context, {N, Dv});
    r.weights = reshape(a.weights, {N, S});
    if (need_internals) {  // [N, 1, 1, ...] -> [N, ...]
      r.internals.add(internal::kScores, reshape(a.scores, {N, S}));
      if (a.window.defined()) r.internals.add(internal::kWindow, reshape(a.window, {N, 2}));
      if (a.positions.defined()) r.internals.add(internal::kPosition, reshape(a.positions, {N}));
    }
  }
  if (need_internals) {
    r.internals.add(internal::kQuery, h.detach());
    r.internals.add(internal::kContext, context.detach());
  }
  // h̃_t = tanh(W_c [c_t; h_t])
  r.state.set(luong_state::kFeed, drop(tanh(combine_->forward(concat({context, h}, 1)))));
  return r;
}

StepOutput Luong::step(const EncoderMemory& m, const DecoderState& state, const Tensor& prev, int64_t t,
                       StepDetail detail) const {
  const size_t want = size_t(cfg_.decoder_layers * (lstm() ? 2 : 1) + 1);
  bool ok = state.buffers().size() == want && state.has(luong_state::kFeed) && prev.defined() && prev.dim() == 1 &&
            prev.size(0) == state.rows();
  for (int64_t l = 0; ok && l < cfg_.decoder_layers; ++l)
    ok = state.has(luong_state::h(l)) && (!lstm() || state.has(luong_state::c(l)));
  if (!ok) throw std::invalid_argument("luong step: expects the state from encode()/step() and prev [N]");
  StepResult r = decoder_step(m, tgt_embed_->forward(prev), state, t, detail == StepDetail::Internals);
  StepOutput out;
  out.internals = std::move(r.internals);
  Tensor logits = linear(feed(r.state), out_w_, out_b_);
  out.log_probs = autograd::grad_enabled() ? log_softmax(logits, -1) : log_softmax_rows(logits);
  out.attention.add(kAttentionMap, r.weights);
  out.state = std::move(r.state);
  return out;
}

Tensor Luong::forced_features_by_steps(const data::Seq2SeqBatch& b) const {
  Encoded e = encode(b.src, b.src_lengths);
  const int64_t T = b.tgt_in.size(1);
  Tensor emb = drop(tgt_embed_->forward(time_major(b.tgt_in)));  // [T, B, E]
  std::vector<Tensor> emb_t = unbind0(emb);
  std::vector<Tensor> feeds;
  feeds.reserve(size_t(T));
  DecoderState s = e.state;
  for (int64_t t = 0; t < T; ++t) {
    s = decoder_step(e.memory, emb_t[size_t(t)], s, t).state;
    feeds.push_back(feed(s));
  }
  // h̃ of all steps: [T * B, Hd] (the output projection follows in loss / forced_logits)
  return concat(feeds, 0);
}

LuongLoopWeights Luong::loop_weights() const {
  LuongLoopWeights w;
  w.cell = cfg_.cell;
  for (int64_t l = 0; l < cfg_.decoder_layers; ++l)
    w.layers.push_back(lstm() ? dec_lstm_->weights(l, 0) : dec_gru_->weights(l, 0));
  w.score = cfg_.score;
  w.concat_q = concat_q_, w.concat_v = concat_v_;
  w.window = cfg_.window;
  w.half_width = cfg_.window_half_width;
  w.local_wp = local_wp_, w.local_vp = local_vp_;
  w.combine = combine_->weight;
  return w;
}

std::shared_ptr<const PreparedDecoder> Luong::prepare_fused(StepLayout layout) const {
  LuongStepWeights w;
  w.embed = tgt_embed_->weight;
  w.loop = loop_weights();
  w.w_s = out_w_, w.b_s = out_b_;
  return prepare_luong_decoder(w, layout);
}

std::unique_ptr<StepDecoder> Luong::fused_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                  const EncoderMemory& memory, int64_t max_rows) const {
  return make_luong_decoder(std::move(prepared), memory, max_rows);
}

Tensor Luong::forced_features(const data::Seq2SeqBatch& b) const {
  Encoded e = encode(b.src, b.src_lengths);
  const int64_t B = b.tgt_in.size(0), T = b.tgt_in.size(1), L = cfg_.decoder_layers, Hd = cfg_.decoder_hidden;
  LuongLoopInputs in;
  in.emb = drop(tgt_embed_->forward(time_major(b.tgt_in)));  // [T, B, E]
  in.keys = e.memory.keys(), in.values = e.memory.values(), in.lengths = e.memory.lengths();
  for (int64_t l = 0; l < L; ++l) in.h0.push_back(e.state.live(luong_state::h(l)));
  if (lstm())
    for (int64_t l = 0; l < L; ++l) in.c0.push_back(e.state.live(luong_state::c(l)));
  const float p = float(config_.dropout);
  if (is_training() && p > 0.0f) {  // drawn in decoder_step's order: per step, between layers, then h̃
    if (L > 1) in.layer_masks = Tensor::empty({T, L - 1, B, Hd});
    in.feed_masks = Tensor::empty({T, B, Hd});
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t l = 0; l + 1 < L; ++l)
        dropout_mask(in.layer_masks.data() + (t * (L - 1) + l) * B * Hd, B * Hd, p, dropout_rng_);
      dropout_mask(in.feed_masks.data() + t * B * Hd, B * Hd, p, dropout_rng_);
    }
  }
  return reshape(luong_decoder(in, loop_weights()), {T * B, Hd});  // h̃ of all steps
}

}  // namespace attn::models
