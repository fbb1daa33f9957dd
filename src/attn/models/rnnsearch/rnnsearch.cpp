#include "attn/models/rnnsearch/rnnsearch.h"

#include <stdexcept>

#include "attn/attention/additive_step.h"
#include "attn/models/model_parts.h"
#include "attn/models/output_loss.h"
#include "attn/models/rnnsearch/rnnsearch_decoder.h"
#include "attn/models/rnnsearch/rnnsearch_search.h"

namespace attn::models {

RnnSearch::RnnSearch(const ModelConfig& c, Rng& rng, uint64_t dropout_seed)
    : RnnTextModel(c, dropout_seed, "rnnsearch"), cfg_(detail::own_section<RnnSearchConfig>(config_, "RnnSearch", "rnnsearch")) {
  validate(c);
  const int64_t E = c.embed, He = cfg_.encoder_hidden, Dv = 2 * He, Hd = cfg_.decoder_hidden, A = cfg_.attention,
                R = cfg_.readout;
  make_embeddings(rng);
  nn::RnnOptions ro;
  ro.input_size = E;
  ro.hidden_size = He;
  ro.num_layers = cfg_.encoder_layers;
  ro.bidirectional = true;
  ro.dropout = 0.0f;  // between layers: applied by detail::run_encoder with the model's dropout Rng
  encoder_ = register_module("encoder", std::make_shared<nn::GRU>(ro, rng));
  if (cfg_.decoder_init == DecoderInit::Mean)
    init_ = register_module("init", std::make_shared<nn::Linear>(Dv, Hd, true, rng));
  else if (cfg_.decoder_init == DecoderInit::Backward)
    init_ = register_module("init", std::make_shared<nn::Linear>(He, Hd, true, rng));
  key_ = register_module("attention.key", std::make_shared<nn::Linear>(Dv, A, true, rng));
  query_w_ = register_parameter("attention.query.weight", detail::uniform_param({A, Hd}, Hd, rng));
  score_v_ = register_parameter("attention.v", detail::uniform_param({A}, A, rng));
  decoder_ = register_module("decoder", std::make_shared<nn::GRUCell>(E + Dv, Hd, rng));
  readout_ = register_module("readout", std::make_shared<nn::Linear>(Hd + Dv + E, R, true, rng));
  make_output(R, rng);  // W_y [V, R], b_y [V]
}

Encoded RnnSearch::encode(const Tensor& src, const std::vector<int64_t>& lengths) const {
  detail::check_source("rnnsearch", src, lengths, config_.src_vocab);
  const int64_t B = src.size(0);
  Tensor emb = drop(src_embed_->forward(src));  // [B, S, E]
  detail::EncoderRun enc = detail::run_encoder(*encoder_, false, emb, lengths, float(config_.dropout), is_training(),
                                               dropout_rng_);  // output [B, S, 2He]
  Encoded e;
  e.memory.values() = enc.output;  // annotations h_j = [fwd; bwd]
  e.memory.keys() = attention::project_keys(enc.output, key_->weight, key_->bias);  // [B, S, A], once per batch
  e.memory.lengths() = detail::lengths_tensor(lengths);
  Tensor s0;
  switch (cfg_.decoder_init) {
    case DecoderInit::Mean:  // s0 = tanh(W mean_j h_j + b)
      s0 = tanh(init_->forward(detail::mean_over_valid(enc.output, lengths)));
      break;
    case DecoderInit::Backward:  // s0 = tanh(W h_1^bwd + b): the last layer's reverse final state
      s0 = tanh(init_->forward(enc.last_reverse));
      break;
    case DecoderInit::Zero: s0 = Tensor::zeros({B, cfg_.decoder_hidden}); break;
  }
  e.state.set("s", s0);
  return e;
}

RnnSearch::StepResult RnnSearch::decoder_step(const EncoderMemory& m, const Tensor& emb, const Tensor& s,
                                              bool need_scores) const {
  const int64_t N = emb.size(0), E = emb.size(1), Dv = m.values().size(2);
  // a_i, c_i from the previous state s_{i-1} (the query) and the cached keys
  attention::AdditiveStepOutput att =
      attention::additive_step(s, m.keys(), m.values(), query_w_, score_v_, m.lengths(), need_scores);
  // s_i = GRU([E y_{i-1}; c_i], s_{i-1})
  Tensor x = reshape(concat({emb, att.context}, 1), {N, 1, E + Dv});
  Tensor s_new = gru(x, std::vector<int64_t>(size_t(N), 1), s, decoder_->weights()).h_n;
  return {s_new, att.context, att.weights, att.scores};
}

Tensor RnnSearch::readout(const Tensor& s, const Tensor& c, const Tensor& emb) const {
  // t = tanh(W_o [s; c; E y] + b_o)
  return drop(tanh(readout_->forward(concat({s, c, emb}, 1))));
}

StepOutput RnnSearch::step(const EncoderMemory& m, const DecoderState& state, const Tensor& prev, int64_t t,
                           StepDetail detail) const {
  (void)t;  // the recurrence carries all it needs in s
  if (state.buffers().size() != 1 || !state.has("s") || !prev.defined() || prev.dim() != 1 ||
      prev.size(0) != state.rows())
    throw std::invalid_argument("rnnsearch step: expects state {s [N, Hd]} and prev [N]");
  const Tensor s = state.live("s");
  Tensor emb = tgt_embed_->forward(prev);  // [N, E]
  const bool internals = detail == StepDetail::Internals;
  StepResult r = decoder_step(m, emb, s, internals);
  StepOutput out;
  if (internals) {  // the query is the previous state s_{i-1}; global attention: no window
    out.internals.add(internal::kQuery, s.detach());
    out.internals.add(internal::kScores, r.scores);
    out.internals.add(internal::kContext, r.context.detach());
  }
  Tensor logits = linear(readout(r.s, r.context, emb), out_w_, out_b_);  // W_y t + b_y
  out.log_probs = autograd::grad_enabled() ? log_softmax(logits, -1) : log_softmax_rows(logits);
  out.attention.add(kAttentionMap, r.weights);
  out.state.set("s", r.s);
  return out;
}

std::shared_ptr<const PreparedDecoder> RnnSearch::prepare_fused(StepLayout layout) const {
  RnnSearchStepWeights w;
  w.embed = tgt_embed_->weight;
  w.W_a = query_w_, w.v = score_v_;
  w.w_ih = decoder_->weight_ih, w.w_hh = decoder_->weight_hh, w.b_ih = decoder_->bias_ih, w.b_hh = decoder_->bias_hh;
  w.w_o = readout_->weight, w.b_o = readout_->bias;
  w.w_y = out_w_, w.b_y = out_b_;
  return prepare_rnnsearch_decoder(w, layout);
}

std::unique_ptr<StepDecoder> RnnSearch::fused_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                      const EncoderMemory& memory, int64_t max_rows) const {
  return make_rnnsearch_decoder(std::move(prepared), memory, max_rows);
}

Tensor RnnSearch::forced_features(const data::Seq2SeqBatch& b) const {
  Encoded e = encode(b.src, b.src_lengths);
  const int64_t B = b.tgt_in.size(0), T = b.tgt_in.size(1), E = config_.embed, Hd = cfg_.decoder_hidden,
                Dv = e.memory.values().size(2);
  Tensor emb = drop(tgt_embed_->forward(time_major(b.tgt_in)));  // [T, B, E]
  // the decoder loop as one fused op: the same steps as decoder_step, T times
  DecoderLoopOutput d = rnnsearch_decoder(
      emb, e.memory.keys(), e.memory.values(), e.memory.lengths(), e.state.live("s"),
      {query_w_, score_v_, decoder_->weight_ih, decoder_->weight_hh, decoder_->bias_ih, decoder_->bias_hh});
  // The readout of all T steps at once: [T * B, R] (the vocabulary projection follows in loss / forced_logits)
  return readout(reshape(d.states, {T * B, Hd}), reshape(d.contexts, {T * B, Dv}), reshape(emb, {T * B, E}));
}

}  // namespace attn::models
