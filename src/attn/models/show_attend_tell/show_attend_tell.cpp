#include "attn/models/show_attend_tell/show_attend_tell.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/attention/additive_step.h"
#include "attn/autograd/node.h"
#include "attn/autograd/ops_sequence.h"
#include "attn/models/model_parts.h"
#include "attn/models/output_loss.h"
#include "attn/models/show_attend_tell/show_attend_tell_search.h"
#include "attn/tensor/random.h"

namespace attn::models {
namespace {

nn::CnnEncoderOptions cnn_options(const ShowAttendTellConfig& c) {
  nn::CnnEncoderOptions o;
  o.channels.clear();
  for (int64_t k = 0, ch = c.cnn_channels; k < cnn_blocks(c); ++k, ch *= 2) o.channels.push_back(ch);
  o.groups = 8;
  o.pool = 2;
  o.context_blocks = c.cnn_context_blocks;
  return o;
}

// [T, B] 1 where tgt_out is a target token (EOS included), 0 at padding.
Tensor target_mask(const data::Seq2SeqBatch& b, int pad) {
  Tensor ids = time_major(b.tgt_out);
  Tensor m = Tensor::empty(ids.shape());
  for (int64_t i = 0; i < ids.numel(); ++i) m.data()[i] = ids.data()[i] == float(pad) ? 0.0f : 1.0f;
  return m;
}

// rows [N] cell indices -> one-hot [N, L] (a constant).
Tensor one_hot(const std::vector<int64_t>& cells, int64_t L) {
  Tensor out = Tensor::zeros({int64_t(cells.size()), L});
  for (size_t i = 0; i < cells.size(); ++i) out.data()[int64_t(i) * L + cells[i]] = 1.0f;
  return out;
}

}  // namespace

ShowAttendTell::ShowAttendTell(const ModelConfig& c, Rng& rng, uint64_t dropout_seed)
    : Seq2SeqModel(c, dropout_seed),
      cfg_(detail::own_section<ShowAttendTellConfig>(config_, "ShowAttendTell", "show_attend_tell")),
      attention_rng_(register_rng("attention_rng", dropout_seed ^ 0xa77e4710ULL)) {
  validate(c);
  cnn_ = register_module("encoder", std::make_shared<nn::CnnEncoder>(cnn_options(cfg_), rng));
  const int64_t D = cnn_->feature_dim(), E = c.embed, Hd = cfg_.decoder_hidden, A = cfg_.attention;
  const int64_t L = cfg_.grid * cfg_.grid;
  grid_position_ = register_parameter("grid_position", detail::uniform_param({L, D}, 1, rng));
  init_h_ = register_module("init_h", std::make_shared<nn::Linear>(D, Hd, true, rng));
  init_c_ = register_module("init_c", std::make_shared<nn::Linear>(D, Hd, true, rng));
  if (cfg_.image_attention != ImageAttention::None) {  // the baseline has no scores: no dead parameters
    key_w_ = register_parameter("attention.key.weight", detail::uniform_param({A, D}, D, rng));
    key_b_ = register_parameter("attention.key.bias", detail::uniform_param({A}, D, rng));
    query_w_ = register_parameter("attention.query.weight", detail::uniform_param({A, Hd}, Hd, rng));
    score_v_ = register_parameter("attention.v", detail::uniform_param({A}, A, rng));
  }
  gate_ = register_module("gate", std::make_shared<nn::Linear>(Hd, 1, true, rng));
  embed_ = register_module("embed", detail::make_embedding(c.tgt_vocab, c, rng));
  cell_ = register_module("decoder", std::make_shared<nn::LSTMCell>(E + D, Hd, rng));
  out_h_ = register_module("output.h", std::make_shared<nn::Linear>(Hd, E, false, rng));
  out_z_ = register_module("output.z", std::make_shared<nn::Linear>(D, E, false, rng));
  if (c.tied_embeddings == TiedEmbeddings::None)
    out_w_ = register_parameter("output.weight", detail::uniform_param({c.tgt_vocab, E}, E, rng));
  else
    out_w_ = embed_->weight;
  out_b_ = register_parameter("output.bias", detail::uniform_param({c.tgt_vocab}, E, rng));
  baseline_ = register_buffer("reinforce_baseline", Tensor::zeros({2}));
}

Tensor ShowAttendTell::drop(const Tensor& x) const { return dropout(x, float(config_.dropout), is_training(), dropout_rng_); }

Encoded ShowAttendTell::encode(const Tensor& src, const std::vector<int64_t>& lengths) const {
  const int64_t S = cfg_.image_size;
  if (!src.defined() || src.dim() != 4 || src.size(1) != 3 || src.size(2) != S || src.size(3) != S)
    throw std::invalid_argument("show_attend_tell: src must be images [batch, 3, " + std::to_string(S) + ", " +
                                std::to_string(S) + "], got " + shape_str(src));
  if (int64_t(lengths.size()) != src.size(0))
    throw std::invalid_argument("show_attend_tell: " + std::to_string(lengths.size()) + " lengths for " +
                                std::to_string(src.size(0)) + " images");
  // [B, L, D]: the CNN's features plus where each cell is (the features alone
  // do not say it, and the captions name left / right / above / below)
  Tensor a = cnn_->forward(src) + grid_position_;
  const int64_t B = a.size(0), L = a.size(1);
  Encoded e;
  e.memory.values() = a;
  // keys [B, L, A]; none: no scores, the values stand in (select_rows keeps them shared)
  e.memory.keys() = key_w_.defined() ? attention::project_keys(a, key_w_, key_b_) : a;
  e.memory.lengths() = Tensor::full({B}, float(L));
  Tensor mean_a = mean(a, 1);  // [B, D]
  e.state.set("h", tanh(init_h_->forward(mean_a)));
  e.state.set("c", tanh(init_c_->forward(mean_a)));
  return e;
}

std::vector<int64_t> ShowAttendTell::choose_cells(const Tensor& weights) const {
  const int64_t N = weights.size(0), L = weights.size(1);
  std::vector<int64_t> cells(size_t(N), 0);
  for (int64_t n = 0; n < N; ++n) {
    const float* w = weights.data() + n * L;
    int64_t pick = 0;
    if (is_training()) {  // inverse CDF of one uniform draw; the last cell takes any rounding leftover
      float u = attention_rng_.uniform(), acc = 0;
      for (pick = 0; pick + 1 < L; ++pick) {
        acc += w[pick];
        if (u < acc) break;
      }
    } else {
      pick = int64_t(std::max_element(w, w + L) - w);
    }
    cells[size_t(n)] = pick;
  }
  return cells;
}

ShowAttendTell::Attended ShowAttendTell::attend(const EncoderMemory& m, const Tensor& h, bool need_scores,
                                                const Tensor& expected_rows) const {
  const int64_t N = h.size(0), L = m.values().size(1), D = m.values().size(2);
  Attended r;
  switch (cfg_.image_attention) {
    case ImageAttention::Soft: {
      attention::AdditiveStepOutput a = attention::additive_step(h, m.keys(), m.values(), query_w_, score_v_, m.lengths(),
                                                                 need_scores);
      r.context = a.context;
      r.weights = a.weights;
      r.scores = a.scores;
      return r;
    }
    case ImageAttention::None:
      r.context = mean(m.values(), 1);
      r.weights = Tensor::full({N, L}, 1.0f / float(L));
      if (need_scores) r.scores = Tensor::zeros({N, L});
      return r;
    case ImageAttention::Hard: break;
  }
  // Hard: soft's fused score and softmax (attention/additive_step.h), whose
  // weights are differentiable; the REINFORCE term reads log alpha of the
  // chosen cell, taken from the weights (a cell is only drawn where alpha > 0;
  // the 1e-30 keeps log finite where alpha underflowed to 0, whose entropy
  // term alpha log alpha is 0 either way). Its soft context is the expected
  // one, taken by the rows of expected_rows [N] (1: expected, 0: drawn), whose
  // REINFORCE advantage is then 0 (loss_terms): their attention learns by backpropagation.
  attention::AdditiveStepOutput a = attention::additive_step(h, m.keys(), m.values(), query_w_, score_v_, m.lengths(),
                                                             need_scores);
  r.weights = a.weights;
  r.scores = a.scores;
  Tensor chosen = one_hot(choose_cells(r.weights), L);
  r.context = reshape(matmul(reshape(chosen, {N, 1, L}), m.values()), {N, D});
  if (!is_training()) return r;
  Tensor log_alpha = log(affine(r.weights, 1.0f, 1e-30f));
  r.log_choice = sum(log_alpha * chosen, 1);
  r.entropy = -sum(r.weights * log_alpha, 1);
  if (expected_rows.defined()) r.context = r.context + (a.context - r.context) * reshape(expected_rows, {N, 1});
  return r;
}

ShowAttendTell::DecodeStep ShowAttendTell::decoder_step(const EncoderMemory& m, const Tensor& emb,
                                                        const DecoderState& s, bool need_scores,
                                                        const Tensor& expected_rows) const {
  const Tensor h = s.live("h"), c = s.live("c");
  DecodeStep r;
  r.attended = attend(m, h, need_scores, expected_rows);
  Tensor z = r.attended.context * sigmoid(gate_->forward(h));  // [N, D] * beta [N, 1]
  nn::LstmState next = cell_->forward(concat({emb, z}, 1), {h, c});
  r.state.set("h", next.h);
  r.state.set("c", next.c);
  r.features = drop(emb + out_h_->forward(next.h) + out_z_->forward(z));
  return r;
}

StepOutput ShowAttendTell::step(const EncoderMemory& m, const DecoderState& state, const Tensor& prev, int64_t t,
                                StepDetail detail) const {
  (void)t;  // the recurrence carries all it needs in h and c
  if (state.buffers().size() != 2 || !state.has("h") || !state.has("c") || !prev.defined() || prev.dim() != 1 ||
      prev.size(0) != state.rows())
    throw std::invalid_argument("show_attend_tell step: expects the state {h, c} from encode()/step() and prev [N]");
  const bool internals = detail == StepDetail::Internals;
  DecodeStep r = decoder_step(m, embed_->forward(prev), state, internals);
  StepOutput out;
  Tensor logits = linear(r.features, out_w_, out_b_);
  out.log_probs = autograd::grad_enabled() ? log_softmax(logits, -1) : log_softmax_rows(logits);
  out.attention.add(kAttentionMap, r.attended.weights);
  if (internals) {
    out.internals.add(internal::kQuery, state.live("h").detach());
    out.internals.add(internal::kScores, r.attended.scores);
    out.internals.add(internal::kContext, r.attended.context.detach());
  }
  out.state = std::move(r.state);
  return out;
}

void ShowAttendTell::check_eval() const {
  if (is_training())
    throw std::logic_error("show_attend_tell decoder: the model is in training mode (dropout active, hard attention "
                           "draws its cells)");
}

bool ShowAttendTell::searches_in(nn::StepWeightType compute) const {
  return compute == nn::StepWeightType::F32 || compute == nn::StepWeightType::I8 ||
         compute == nn::StepWeightType::BF16;
}

std::shared_ptr<const PreparedDecoder> ShowAttendTell::prepare_decoder(int64_t max_rows,
                                                                      nn::StepWeightType compute) const {
  check_eval();
  ShowAttendTellStepWeights w;
  w.attention = cfg_.image_attention;
  w.embed = embed_->weight;
  w.query_w = query_w_, w.v = score_v_;  // undefined for none
  w.gate_w = gate_->weight, w.gate_b = gate_->bias;
  w.w_ih = cell_->weight_ih, w.w_hh = cell_->weight_hh, w.b_ih = cell_->bias_ih, w.b_hh = cell_->bias_hh;
  w.out_h = out_h_->weight, w.out_z = out_z_->weight;
  w.out_w = out_w_, w.out_b = out_b_;
  return prepare_show_attend_tell_decoder(w, step_layout(max_rows, compute));
}

std::unique_ptr<StepDecoder> ShowAttendTell::decoder(const EncoderMemory& memory, int64_t max_rows,
                                                     std::shared_ptr<const PreparedDecoder> prepared) const {
  check_eval();
  return make_show_attend_tell_decoder(prepared ? std::move(prepared) : prepare_decoder(max_rows), memory, max_rows);
}

ShowAttendTell::ForcedRun ShowAttendTell::run_forced(const data::Seq2SeqBatch& b) const {
  Encoded e = encode(b.src, b.src_lengths);
  if (!b.src_rows.empty()) {  // images shared by several captions: encoded once, each caption reads its image's row
    if (int64_t(b.src_rows.size()) != b.tgt_in.size(0))
      throw std::invalid_argument("show_attend_tell: " + std::to_string(b.src_rows.size()) + " src_rows for " +
                                  std::to_string(b.tgt_in.size(0)) + " captions");
    e.memory = select_rows(e.memory, b.src_rows);
    e.state = select_rows(e.state, b.src_rows);
  }
  const int64_t T = b.tgt_in.size(1), B = b.tgt_in.size(0);
  std::vector<Tensor> emb_t = unbind0(embed_->forward(time_major(b.tgt_in)));  // T x [B, E]
  ForcedRun run;
  run.drawn.assign(size_t(B), 1.0f);
  Tensor expected_rows;  // [B]: hard attention's captions that take the expected context at every step
  if (cfg_.image_attention == ImageAttention::Hard && is_training() && cfg_.hard_expected_prob > 0) {
    expected_rows = Tensor::empty({B});
    for (int64_t k = 0; k < B; ++k) {
      const bool expected = attention_rng_.uniform() < cfg_.hard_expected_prob;
      expected_rows.data()[k] = expected ? 1.0f : 0.0f;
      run.drawn[size_t(k)] = expected ? 0.0f : 1.0f;
    }
  }
  std::vector<Tensor> features;
  DecoderState s = e.state;
  for (int64_t t = 0; t < T; ++t) {
    DecodeStep r = decoder_step(e.memory, emb_t[size_t(t)], s, false, expected_rows);
    s = std::move(r.state);
    features.push_back(r.features);
    run.weights.push_back(r.attended.weights);
    if (r.attended.log_choice.defined()) {
      run.log_choice.push_back(r.attended.log_choice);
      run.entropy.push_back(r.attended.entropy);
    }
  }
  run.features = concat(features, 0);
  return run;
}

Tensor ShowAttendTell::forced_features(const data::Seq2SeqBatch& b) const { return run_forced(b).features; }

Tensor ShowAttendTell::loss(const data::Seq2SeqBatch& b, const LossOptions& options) const {
  LossTerms t = loss_terms(b, options);
  Tensor total = t.cross_entropy;
  for (const Tensor* x : {&t.regulariser, &t.reinforce, &t.entropy})
    if (x->defined()) total = total + *x;
  return total;
}

ShowAttendTell::LossTerms ShowAttendTell::loss_terms(const data::Seq2SeqBatch& b, const LossOptions& options) const {
  ForcedRun run = run_forced(b);
  LossTerms terms;
  terms.cross_entropy = cross_entropy_of(run.features, b, options);
  if (!is_training() || cfg_.image_attention == ImageAttention::None) return terms;
  const int64_t T = int64_t(run.weights.size()), B = b.tgt_in.size(0), L = run.weights[0].size(1);
  Tensor mask = target_mask(b, config_.specials.pad);  // [T, B]
  std::vector<Tensor> mask_t = unbind0(mask);          // T x [B] (constants)
  double tokens = 0;
  for (int64_t i = 0; i < mask.numel(); ++i) tokens += mask.data()[i];
  const float per_token = 1.0f / float(std::max(tokens, 1.0));
  // doubly stochastic attention: sum_b sum_i (1 - sum_t alpha_bti)^2
  Tensor attention_sum = Tensor::zeros({B, L});
  for (int64_t t = 0; t < T; ++t)
    attention_sum = attention_sum + run.weights[size_t(t)] * reshape(mask_t[size_t(t)], {B, 1});
  Tensor gap = affine(attention_sum, -1.0f, 1.0f);
  terms.regulariser = sum_all(gap * gap) * float(cfg_.attention_reg * per_token);
  if (cfg_.image_attention != ImageAttention::Hard) return terms;
  // REINFORCE. The choice s_t is weighed by the reward to go, R_tb = sum_{t' >= t} r_t'b
  // with r_tb = log p(y_tb | s_b, a), less the baseline of as many tokens n_tb: the
  // words before t do not depend on s_t, so their terms average to 0
  // (E[d log alpha_t(s_t)] = 0 given the past) and dropping them leaves the
  // estimator's expectation, eq. 12's, unchanged while removing their variance.
  std::vector<double> to_go(size_t(T * B), 0.0), tokens_to_go(size_t(T * B), 0.0);  // R_tb, n_tb
  {
    NoGradGuard ng;
    Tensor logp = log_softmax_rows(linear(run.features.detach(), out_w_, out_b_));  // [T * B, V]
    Tensor targets = time_major(b.tgt_out);
    const int64_t V = logp.size(1);
    for (int64_t t = T - 1; t >= 0; --t)
      for (int64_t k = 0; k < B; ++k) {
        const int64_t i = t * B + k;
        const bool later = t + 1 < T;
        to_go[size_t(i)] = later ? to_go[size_t(i + B)] : 0.0;
        tokens_to_go[size_t(i)] = (later ? tokens_to_go[size_t(i + B)] : 0.0) + mask.data()[i];
        if (mask.data()[i] > 0) to_go[size_t(i)] += logp.data()[i * V + int64_t(targets.data()[i])];
      }
  }
  double mean_r = 0, drawn = 0;  // per token, over the captions that drew their cells (the others have no REINFORCE term)
  for (int64_t k = 0; k < B; ++k) {
    mean_r += run.drawn[size_t(k)] * to_go[size_t(k)] / std::max(tokens_to_go[size_t(k)], 1.0);
    drawn += run.drawn[size_t(k)];
  }
  mean_r = drawn > 0 ? mean_r / drawn : std::nan("");
  float* base = baseline_.data();  // {moving average, updates}; the first batch is its own baseline
  const double baseline = base[1] > 0 ? double(base[0]) : mean_r;
  Tensor reinforce_sum = Tensor::zeros({}), entropy = Tensor::zeros({B});
  for (int64_t t = T - 1; t >= 0; --t) {  // the order of the sums that trained the committed figures
    Tensor advantage = Tensor::zeros({B});  // a constant; 0 at padding and for captions that took the expectation
    for (int64_t k = 0; k < B; ++k) {
      const int64_t i = t * B + k;
      if (mask.data()[i] > 0 && run.drawn[size_t(k)] > 0)
        advantage.data()[k] = float(to_go[size_t(i)] - tokens_to_go[size_t(i)] * baseline);
    }
    reinforce_sum = reinforce_sum + sum_all(run.log_choice[size_t(t)] * advantage);
    entropy = entropy + run.entropy[size_t(t)] * mask_t[size_t(t)];
  }
  terms.reinforce = reinforce_sum * float(-cfg_.reinforce_weight * per_token);
  terms.entropy = sum_all(entropy) * float(-cfg_.entropy_bonus * per_token);
  if (std::isfinite(mean_r)) {  // a non-finite batch (its update is skipped), or one that drew no cell, leaves it alone
    const double decay = base[1] > 0 ? cfg_.baseline_decay : 0.0;
    base[0] = float(decay * double(base[0]) + (1 - decay) * mean_r);
    base[1] += 1;
  }
  return terms;
}

}  // namespace attn::models
