#include "attn/models/seq2seq.h"

#include "attn/nn/step_weight_types.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <cstring>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/vocab_topk.h"
#include "attn/models/attention_maps.h"
#include "attn/models/kinds.h"
#include "attn/models/model_parts.h"
#include "attn/models/output_loss.h"

namespace attn::models {

Tensor Seq2SeqModel::forced_logits(const data::Seq2SeqBatch& b) const {
  OutputLayer out = output_layer();
  return linear(forced_features(b), out.weight, out.bias);
}

Tensor Seq2SeqModel::loss(const data::Seq2SeqBatch& b, const LossOptions& options) const {
  return cross_entropy(b, options);
}

Tensor Seq2SeqModel::cross_entropy(const data::Seq2SeqBatch& b, const LossOptions& options) const {
  return cross_entropy_of(forced_features(b), b, options);
}

Tensor Seq2SeqModel::cross_entropy_of(const Tensor& features, const data::Seq2SeqBatch& b,
                                      const LossOptions& options) const {
  Tensor targets = time_major(b.tgt_out);  // [T, B]
  CrossEntropyOptions ce;
  ce.ignore_index = config_.specials.pad;
  ce.label_smoothing = options.label_smoothing;
  OutputLayer out = output_layer();
  return output_cross_entropy(features, out.weight, out.bias, targets.view({targets.numel()}), ce);
}

const Tensor* NamedTensors::find(const std::string& name) const {
  for (const auto& [n, t] : items)
    if (n == name) return &t;
  return nullptr;
}

void NamedTensors::add(const std::string& name, const Tensor& t) {
  if (t.defined()) items.emplace_back(name, t);
}

std::vector<std::string> NamedTensors::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : items) out.push_back(n);
  return out;
}

std::vector<std::string> Seq2SeqModel::attention_maps() const { return {kAttentionMap}; }

std::vector<std::string> Seq2SeqModel::encoder_attention_maps() const { return {}; }

Tensor Seq2SeqModel::encoder_attention(const Tensor&, const std::vector<int64_t>&, const std::string& name) const {
  resolve_encoder_map(*this, name);  // throws: the model reports no encoder maps
  throw std::logic_error("encoder_attention: the model lists encoder maps but does not compute them");
}

std::string resolve_attention_map(const Seq2SeqModel& model, const std::string& name) {
  return resolve_map(model.attention_maps(), name, "attention map");
}

std::string resolve_encoder_map(const Seq2SeqModel& model, const std::string& name) {
  const std::vector<std::string> maps = model.encoder_attention_maps();
  if (maps.empty())
    throw std::invalid_argument("the model (" + model.config().type + ") has no encoder self-attention maps");
  return resolve_map(maps, name, "encoder attention map");
}

namespace {

// Seq2SeqModel::decoder()'s default: step() over the selected memory rows and
// the state's live rows, its new state copied back into them, then the top k
// of each row of its log-probabilities.
class StepwiseDecoder final : public StepDecoder {
public:
  StepwiseDecoder(const Seq2SeqModel& model, const EncoderMemory& memory) : model_(model), memory_(memory) {}

  const StepTop& step(const std::vector<int64_t>& rows, DecoderState& state, const std::vector<int>& prev, int64_t k,
                      int64_t t) override {
    if (prev.size() != rows.size() || state.rows() != int64_t(rows.size()))
      throw std::invalid_argument("decoder step: rows, state rows and prev differ in size");
    if (rows != rows_ || selected_.all().empty()) {  // the search changed the row -> sentence map
      selected_ = select_rows(memory_, rows);
      rows_ = rows;
    }
    Tensor ids = Tensor::empty({int64_t(prev.size())});
    for (size_t i = 0; i < prev.size(); ++i) ids.data()[i] = float(prev[i]);
    StepOutput o = model_.step(selected_, state.live_view(), ids, t);
    top_k(o.log_probs, k);
    out_.attention = Tensor();
    if (!attention_map_.empty()) {
      const Tensor* a = o.attention.find(attention_map_);
      if (!a) throw std::logic_error("decoder step: step() reported no attention map \"" + attention_map_ + "\"");
      out_.attention = *a;
    }
    state.copy_live_from(o.state);
    return out_;
  }

  void report_attention(const std::string& map) override {
    if (!map.empty()) resolve_attention_map(model_, map);  // throws for a map the model does not report
    attention_map_ = map;
  }

  void restrict_vocabulary(const std::vector<int>& tokens) override {
    const int64_t V = model_.config().tgt_vocab;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= V || (i > 0 && tokens[i] <= tokens[i - 1]))
        throw std::invalid_argument("vocabulary shortlist: token " + std::to_string(tokens[i]) +
                                    " outside [0, V) or not above the one before");
    ids_ = tokens;
  }

private:
  // log_probs [N, V] -> out_: each row's k best (over ids_ when restricted, log p renormalised over them)
  void top_k(const Tensor& log_probs, int64_t k) {
    const int64_t N = log_probs.size(0), V = log_probs.size(1), n = ids_.empty() ? V : int64_t(ids_.size());
    if (k < 1 || k > n) throw std::invalid_argument("decoder step: k " + std::to_string(k) + " outside [1, V]");
    out_.k = k;
    out_.tokens.resize(size_t(N * k));
    out_.log_probs.resize(size_t(N * k));
    std::vector<float> kept(size_t(ids_.empty() ? 0 : n));
    for (int64_t i = 0; i < N; ++i) {
      const float* row = log_probs.data() + i * V;
      int* tokens = out_.tokens.data() + i * k;
      if (ids_.empty()) {
        top_k_row(row, V, 0.0f, k, tokens, out_.log_probs.data() + i * k);
        continue;
      }
      for (int64_t j = 0; j < n; ++j) kept[size_t(j)] = row[ids_[size_t(j)]];
      top_k_row(kept.data(), n, log_sum_exp_row(kept.data(), n), k, tokens, out_.log_probs.data() + i * k);
      for (int64_t j = 0; j < k; ++j) tokens[j] = ids_[size_t(tokens[j])];
    }
  }

  const Seq2SeqModel& model_;
  EncoderMemory memory_, selected_;
  std::vector<int64_t> rows_;
  std::vector<int> ids_;  // restrict_vocabulary()'s tokens, [] for all
  StepTop out_;
};

}  // namespace

void StepDecoder::restrict_vocabulary(const std::vector<int>& tokens) {
  if (!tokens.empty()) throw std::invalid_argument("this model's decoder has no vocabulary shortlist");
}

DecoderState StepDecoder::start(const DecoderState& initial, int64_t max_rows, int64_t max_steps) {
  (void)max_steps;  // nothing cached per step
  DecoderState s(initial.rows(), std::max(initial.rows(), max_rows));
  for (const auto& [name, t] : initial.buffers()) {
    const Tensor src = initial.live(name);
    s.add(name, Shape(src.shape().begin() + 1, src.shape().end()));
  }
  s.copy_live_from(initial.live_view());
  return s;
}

std::unique_ptr<StepDecoder> Seq2SeqModel::decoder(const EncoderMemory& memory, int64_t max_rows,
                                                   std::shared_ptr<const PreparedDecoder> prepared) const {
  (void)max_rows, (void)prepared;
  return std::make_unique<StepwiseDecoder>(*this, memory);
}

std::shared_ptr<const PreparedDecoder> Seq2SeqModel::prepare_decoder(int64_t max_rows,
                                                                    nn::StepWeightType compute) const {
  (void)max_rows;
  if (!searches_in(compute))
    throw std::invalid_argument("model type " + config_.type + ": its search computes in fp32 only (--compute " +
                                nn::step_weight_kernels(compute).name + " needs a kind with a fused search step)");
  return nullptr;
}

std::unique_ptr<Seq2SeqModel> make_model(const ModelConfig& config, Rng& init, uint64_t dropout_seed) {
  return model_kind(config.type).make(config, init, dropout_seed);
}

Tensor select_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  if (!x.defined()) return x;
  if (x.dim() < 1) throw std::invalid_argument("select_rows: scalar tensor");
  Shape s = x.shape();
  const int64_t M = s[0], row = M ? x.numel() / M : 0;
  s[0] = int64_t(rows.size());
  for (int64_t r : rows)
    if (r < 0 || r >= M)
      throw std::invalid_argument("select_rows: row " + std::to_string(r) + " outside [0, " + std::to_string(M) + ")");
  if (x.requires_grad() && autograd::grad_enabled()) {  // the embedding lookup: its backward scatter-adds the rows
    Tensor ids = Tensor::empty({int64_t(rows.size())});
    for (size_t i = 0; i < rows.size(); ++i) ids.data()[i] = float(rows[i]);
    return reshape(embedding(reshape(x, {M, row}), ids), s);
  }
  Tensor out = Tensor::empty(s);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out.data() + int64_t(i) * row, x.data() + rows[i] * row, size_t(row) * sizeof(float));
  return out;
}

EncoderMemory select_rows(const EncoderMemory& m, const std::vector<int64_t>& rows) {
  EncoderMemory out;
  for (const auto& [name, t] : m.all()) {
    // a tensor that is another one (luong dot's keys are its values) stays one
    const Tensor* shared = nullptr;
    for (const auto& [prior, u] : m.all())
      if (prior < name && u.same(t) && t.defined()) shared = &out.get(prior);
    out[name] = shared ? *shared : select_rows(t, rows);
  }
  return out;
}

DecoderState select_rows(const DecoderState& s, const std::vector<int64_t>& rows) {
  DecoderState out;
  for (const auto& [name, t] : s.buffers()) {
    (void)t;
    out.set(name, select_rows(s.live(name), rows));
  }
  return out;
}

Tensor time_major(const Tensor& ids) {
  if (!ids.defined() || ids.dim() != 2) throw std::invalid_argument("time_major: expects ids [B, T]");
  const int64_t B = ids.size(0), T = ids.size(1);
  Tensor out = Tensor::empty({T, B});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) out.data()[t * B + b] = ids.data()[b * T + t];
  return out;
}

namespace detail {

Tensor lengths_tensor(const std::vector<int64_t>& lengths) {
  Tensor t = Tensor::empty({int64_t(lengths.size())});
  for (size_t i = 0; i < lengths.size(); ++i) t.data()[i] = float(lengths[i]);
  return t;
}

Tensor mean_over_valid(const Tensor& x, const std::vector<int64_t>& lengths) {
  const int64_t B = x.size(0);
  Tensor inv = Tensor::empty({B, 1});
  for (int64_t b = 0; b < B; ++b) inv.data()[b] = lengths[size_t(b)] > 0 ? 1.0f / float(lengths[size_t(b)]) : 0.0f;
  // x is zero past each length (the fused RNN ops write zeros there)
  return mul(sum(x, 1), inv);
}

void check_source(const char* who, const Tensor& src, const std::vector<int64_t>& lengths, int64_t vocab) {
  if (!src.defined() || src.dim() != 2)
    throw std::invalid_argument(std::string(who) + ": src must be [batch, src_len], got " +
                                shape_str(src));
  if (int64_t(lengths.size()) != src.size(0))
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(lengths.size()) + " lengths for src " +
                                src.shape().str());
  for (int64_t len : lengths)
    if (len < 1 || len > src.size(1))
      throw std::invalid_argument(std::string(who) + ": source length " + std::to_string(len) + " outside [1, " +
                                  std::to_string(src.size(1)) + "]");
  (void)vocab;  // ids are range-checked by the embedding lookup
}

std::shared_ptr<nn::Embedding> make_embedding(int64_t vocab, const ModelConfig& c, Rng& rng) {
  auto e = std::make_shared<nn::Embedding>(vocab, c.embed, c.specials.pad, rng);
  if (c.tied_embeddings != TiedEmbeddings::None) {
    // Shared with the output projection: N(0, 1/sqrt(E)) as fairseq / Marian,
    // so the initial logits are O(1) rather than O(sqrt(E)).
    const float scale = 1.0f / std::sqrt(float(c.embed));
    float* w = e->weight.data();
    for (int64_t i = 0; i < e->weight.numel(); ++i) w[i] *= scale;
  }
  return e;
}

Tensor uniform_param(const Shape& shape, int64_t fan_in, Rng& rng) {
  const float k = 1.0f / std::sqrt(float(fan_in));
  return rand_uniform(shape, rng, -k, k);
}

Tensor columns(const Tensor& w, int64_t c0, int64_t cols, bool transposed) {
  const int64_t rows = w.size(0), ld = w.size(1);
  Tensor out = Tensor::empty(transposed ? Shape{cols, rows} : Shape{rows, cols});
  const float* src = w.data();
  float* dst = out.data();
  if (!transposed) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * cols, src + r * ld + c0, size_t(cols) * sizeof(float));
    return out;
  }
  // 32 x 32 blocks: both sides touch whole cache lines (a row-by-row transpose
  // writes one float per line, ~1.5% of a training step for three weights)
  constexpr int64_t kB = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kB)
    for (int64_t k0 = 0; k0 < cols; k0 += kB)
      for (int64_t r = r0; r < std::min(rows, r0 + kB); ++r)
        for (int64_t k = k0; k < std::min(cols, k0 + kB); ++k) dst[k * rows + r] = src[r * ld + c0 + k];
  return out;
}

EncoderRun run_encoder(const nn::RnnStack& stack, bool lstm, const Tensor& x, const std::vector<int64_t>& lengths,
                       float p, bool training, Rng& rng) {
  const nn::RnnOptions& o = stack.options();
  const int64_t D = o.bidirectional ? 2 : 1;
  // Without autograd (decoding), the two directions of a layer run side by side,
  // one thread each: a direction's recurrence is a chain of small steps, and on
  // one thread it needs no barrier per step (lean rnnsearch, 2 threads: a batch-1
  // encoder 1.16 -> 0.87 ms; at batch 64 the change hid in the machine's noise,
  // 13-20 ms either way). Each op then runs single-threaded (nested regions get one thread,
  // OpenBLAS inside a parallel region too); the results do not depend on the
  // thread count. With autograd the recording stays on the calling thread.
  const bool side_by_side = D == 2 && !autograd::grad_enabled() && num_threads() > 1 && !omp_in_parallel();
  EncoderRun r;
  Tensor in = x;
  for (int64_t k = 0; k < o.num_layers; ++k) {
    Tensor y[2], h[2];
    std::exception_ptr error[2];
    auto run = [&](int64_t dir) {
      try {
        std::optional<NoGradGuard> no_grad;  // grad mode is per thread: off on the helper thread too
        if (side_by_side) no_grad.emplace();
        const RnnDirection rd = dir ? RnnDirection::Reverse : RnnDirection::Forward;
        if (lstm) {
          LstmResult l = attn::lstm(in, lengths, Tensor(), Tensor(), stack.weights(k, int(dir)), rd);
          y[dir] = l.output, h[dir] = l.h_n;
        } else {
          GruResult g = attn::gru(in, lengths, Tensor(), stack.weights(k, int(dir)), rd);
          y[dir] = g.output, h[dir] = g.h_n;
        }
      } catch (...) {
        error[dir] = std::current_exception();
      }
    };
    if (side_by_side) {
#pragma omp parallel for num_threads(2) schedule(static, 1)
      for (int64_t dir = 0; dir < 2; ++dir) run(dir);
    } else {
      for (int64_t dir = 0; dir < D; ++dir) run(dir);
    }
    for (int64_t dir = 0; dir < D; ++dir)
      if (error[dir]) std::rethrow_exception(error[dir]);
    if (D == 2 && k + 1 == o.num_layers) r.last_reverse = h[1];
    in = D == 1 ? y[0] : concat({y[0], y[1]}, 2);  // PyTorch's order: forward features, then reverse
    if (k + 1 < o.num_layers) in = dropout(in, p, training, rng);
  }
  r.output = in;
  return r;
}

}  // namespace detail

}  // namespace attn::models
