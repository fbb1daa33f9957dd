// The Transformer's cached search step (see the header).
#include "attn/models/transformer/transformer_search.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/activation.h"
#include "attn/kernels/layer_norm.h"
#include "attn/kernels/mha_rows.h"
#include "attn/kernels/tile_epilogue.h"
#include "attn/models/step_logits.h"
#include "attn/models/step_packing.h"
#include "attn/models/transformer/transformer.h"
#include "attn/models/transformer/transformer_prepared.h"
#include "attn/nn/step_linear.h"

namespace attn::models {
namespace {

std::string cache_name(const char* what, size_t l) { return std::string(what) + "." + std::to_string(l); }

class TransformerStepDecoder final : public StepDecoder {
public:
  TransformerStepDecoder(std::shared_ptr<const TransformerPrepared> p, const EncoderMemory& memory)
      : p_(std::move(p)), m_(*p_->model), memory_(memory), logits_(&p_->y, p_->b_y.data(), p_->w_y) {
    const TransformerConfig& s = m_.section();
    E_ = m_.config().embed, H_ = s.heads, hd_ = E_ / H_, L_ = s.decoder_layers, V_ = m_.config().tgt_vocab;
    F_ = m_.decoder_stack().layers.front()->linear1->weight.size(0);
    B_ = memory_.lengths().size(0), S_ = memory_.values().size(1);
    for (int64_t b = 0; b < B_; ++b) len_.push_back(int64_t(memory_.lengths().data()[b]));
    for (int64_t l = 0; l < L_; ++l) {
      cross_k_.push_back(memory_.get(cache_name("cross_k", size_t(l))).data());
      cross_v_.push_back(memory_.get(cache_name("cross_v", size_t(l))).data());
    }
  }

  DecoderState start(const DecoderState& initial, int64_t max_rows, int64_t max_steps) override {
    max_steps_ = std::min(max_steps, m_.section().max_positions);
    // one size for every search up to kFirstCacheSteps steps (grown by doubling
    // beyond), so the pool hands the same warm blocks to the next search
    const int64_t T = std::min(m_.section().max_positions, kFirstCacheSteps);
    DecoderState s(initial.rows(), std::max(initial.rows(), max_rows));
    for (int64_t l = 0; l < L_; ++l) {
      s.add_unmoved(cache_name("self_k", size_t(l)), T, {E_});
      s.add_unmoved(cache_name("self_v", size_t(l)), T, {E_});
    }
    s.add("self_slot", {T}, 0);
    s.set_filled_steps(0);  // so a gather moves O(t) numbers per row
    return s;
  }

  const StepTop& step(const std::vector<int64_t>& rows, DecoderState& state, const std::vector<int>& prev, int64_t k,
                      int64_t t) override;

  void report_attention(const std::string& map) override {
    map_layer_ = -1, map_head_ = -1;
    if (!map.empty()) {
      (void)resolve_attention_map(m_, map);  // throws for a map the model does not report
      for (int64_t l = 1; l <= L_; ++l)
        for (int64_t h = 0; h <= H_; ++h)
          if (transformer_map_name(l, h) == map) map_layer_ = l - 1, map_head_ = h;
    }
    attention_map_ = map;
  }
  void restrict_vocabulary(const std::vector<int>& tokens) override { logits_.restrict(tokens); }

private:
  using Into = kernels::epilogue::Into;

  // A thread's share of a step. Every phase but the products splits the rows
  // in blocks [r0, r1), one a thread. With many rows a thread keeps its block
  // through the products too (all column units of its rows), so no number
  // crosses threads and no barrier is needed until the logits; with few, the
  // products split their column units across the threads instead (each
  // thread streams part of the weights), and the threads meet at a barrier
  // after every phase.
  struct Part {
    bool own_rows = false;
    int64_t r0 = 0, r1 = 0;
    int thread = 0;
    void sync() const {
      if (!own_rows) {
#pragma omp barrier
      }
    }
  };
  // Rows per thread from which a thread keeps its rows through the products:
  // a full block of the product kernel's rows (rnn_gemm's 12 with AVX-512).
  static constexpr int64_t kOwnRows = 12;
  Part part(int64_t N, int thread, int threads) const;

  // The phases of a step, called by every thread of its parallel region.
  // N rows, buffers of reserve(N).
  void locate_and_embed(const Part& part, const std::vector<int>& prev, int64_t M, int64_t t);
  // out [N, E] = norm(x) of the rows
  void norm_rows(const Part& part, const nn::LayerNorm& n, const float* x, float* out);
  // c [N, p.out] (row stride ldc) from x [N, p.in]: x W^T + b as `into` says, then GELU when `gelu`
  void product(const Part& part, const PreparedLinear& p, const float* x, int64_t N, float* c, int64_t ldc,
               Into into, bool gelu = false);
  // qkv_ [N, 3E] -> ctx_ [N, E]; position t of every row written into layer l's cache
  void self_attend(const Part& part, int64_t l, int64_t t, int64_t M);
  // q_ [N, E] -> ctx_ [N, E]; the reported map when l is its layer
  void cross_attend(const Part& part, int64_t l, const std::vector<int64_t>& rows);
  // x_ [N, E] through decoder layer l (pre- or post-norm residuals)
  void layer(const Part& part, int64_t l, const std::vector<int64_t>& rows, int64_t N, int64_t t, int64_t M);

  void reserve(int64_t N, int64_t t, int threads);

  std::shared_ptr<const TransformerPrepared> p_;
  const Transformer& m_;
  EncoderMemory memory_;
  detail::StepLogits logits_;
  StepTop out_;
  int64_t E_, H_, hd_, L_, V_, F_, B_, S_;
  // The cache starts with this many positions (a batch's step limit, 1.5 x its
  // longest source + 5, is 35 for sources of 20 pieces), and doubles from there
  // for longer searches. Growing from 4 instead re-made and copied every cache
  // 4-5 times per search; sizing it by each batch's limit gave the pool a new
  // size per batch, so every search faulted fresh pages (zeroed by the kernel:
  // 10% of an int8 translation of Multi30k val, batch 64 beam 5; perf, 2026-11-28).
  static constexpr int64_t kFirstCacheSteps = 64;
  int64_t max_steps_ = 0;                   // the longest search start() was told of (within max_positions)
  std::vector<int64_t> len_;                // [B] source lengths
  std::vector<const float*> cross_k_, cross_v_;  // [L] the memory's [B, H, S, hd] keys and values
  int64_t map_layer_ = -1, map_head_ = -1;  // the reported map: 0-based layer, head 1..H or 0 (mean)
  // A step's buffers (reserve()): the residual stream x_ [N, E], its norm h_
  // [N, E], the products' qkv_ [N, 3E] and q_ [N, E] (the cross-attention's
  // queries), ctx_ [N, E] and ff_ [N, F]; the weights probs_ [N, H, W_], W_ =
  // max(S, t + 1). Each buffer has one row stride for every phase: a thread that
  // keeps its rows writes its rows only while the other thread reads its own.
  // offsets_ [N, t + 1] where each row's positions 0..t lie in the caches
  // (floats from a cache's start, head 0); per thread a product's tile [N, kUnit]
  std::vector<float> x_, h_, qkv_, q_, ctx_, ff_, probs_;
  int64_t W_ = 0;
  std::vector<std::vector<float>> tiles_;
  std::vector<int64_t> offsets_;
  std::vector<float*> self_k_, self_v_;  // [L] this step's caches [T', M, E]
  float* slot_ = nullptr;                // the state's "self_slot" [M, T']
  int64_t slot_stride_ = 0;
  nn::StepInput in_;                // a product's input in the weights' type's form (units split)
  std::vector<nn::StepInput> own_;  // per thread: its rows' input (rows owned)
};

void TransformerStepDecoder::reserve(int64_t N, int64_t t, int threads) {
  auto at_least = [](std::vector<float>& v, int64_t n) {
    if (int64_t(v.size()) < n) v.resize(size_t(n));
  };
  at_least(x_, N * E_), at_least(h_, N * E_), at_least(qkv_, N * 3 * E_), at_least(ctx_, N * E_);
  W_ = std::max(S_, t + 1);
  at_least(q_, N * E_), at_least(ff_, N * F_), at_least(probs_, N * H_ * W_);
  if (int64_t(tiles_.size()) < threads) tiles_.resize(size_t(threads)), own_.resize(size_t(threads));
  for (auto& tile : tiles_) at_least(tile, N * nn::StepLinear::kUnit);
  offsets_.resize(size_t(N * (t + 1)));
}

TransformerStepDecoder::Part TransformerStepDecoder::part(int64_t N, int thread, int threads) const {
  Part p;
  p.own_rows = N >= kOwnRows * threads, p.thread = thread;
  p.r0 = N * thread / threads, p.r1 = N * (thread + 1) / threads;
  return p;
}

void TransformerStepDecoder::locate_and_embed(const Part& part, const std::vector<int>& prev, int64_t M, int64_t t) {
  const int64_t Tc = slot_stride_;
  const float scale = std::sqrt(float(E_)), *pe = m_.position_row(t), *emb = m_.target_embedding().weight.data();
  for (int64_t i = part.r0; i < part.r1; ++i) {
    // row i's slot of position t is i (slot numbers are exact in float up to 2^24)
    slot_[i * Tc + t] = float(i);
    for (int64_t p = 0; p <= t; ++p) offsets_[size_t(i * (t + 1) + p)] = (p * M + int64_t(slot_[i * Tc + p])) * E_;
    // x = sqrt(E) emb(prev) + PE(t)
    const float* e = emb + prev[size_t(i)] * E_;
    float* x = x_.data() + i * E_;
#pragma omp simd
    for (int64_t d = 0; d < E_; ++d) x[d] = scale * e[d] + pe[d];
  }
  part.sync();
}

void TransformerStepDecoder::norm_rows(const Part& part, const nn::LayerNorm& n, const float* x, float* out) {
  kernels::norm::layer_norm_rows(x + part.r0 * E_, part.r1 - part.r0, E_, n.weight.data(), n.bias.data(), n.eps,
                                 out + part.r0 * E_, nullptr, nullptr);
  part.sync();
}

void TransformerStepDecoder::product(const Part& part, const PreparedLinear& p, const float* x, int64_t N, float* c,
                                     int64_t ldc, Into into, bool gelu) {
  constexpr int64_t U = nn::StepLinear::kUnit;
  float* tile = tiles_[size_t(part.thread)].data();
  const float* b = p.b.data();
  // the unit's columns x W^T in an L1 tile [rows, cols], then + b and into c
  // (so the residual is x + (x W^T + b), the order of the layers' forward)
  auto unit = [&](const nn::StepRows& in, int64_t u, int64_t r0, int64_t rows) {
    const int64_t cols = p.lin.unit_cols(u), o = u * U;
    p.lin.apply_unit(in, u, tile, U);
    float* y = c + r0 * ldc + o;
    kernels::epilogue::bias_into(into, tile, U, b + o, rows, cols, y, ldc);
    if (gelu)
      for (int64_t i = 0; i < rows; ++i) kernels::activation::gelu(y + i * ldc, y + i * ldc, cols);
  };
  if (part.own_rows) {
    const int64_t rows = part.r1 - part.r0;
    const nn::StepRows in = own_[size_t(part.thread)].set(p.lin.type(), rows, p.lin.in(), x + part.r0 * p.lin.in(),
                                                          p.lin.in());
    for (int64_t u = 0; u < p.lin.units(); ++u) unit(in, u, part.r0, rows);
    return;
  }
  const nn::StepRows in = nn::shared_rows(in_, p.lin.type(), N, p.lin.in(), x, p.lin.in());
  // Units handed out one at a time (dynamic): a thread that shares its core
  // with another process takes fewer of them instead of holding up the barrier.
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < p.lin.units(); ++u) unit(in, u, 0, N);
}

void TransformerStepDecoder::self_attend(const Part& part, int64_t l, int64_t t, int64_t M) {
  float *K = self_k_[size_t(l)], *Vc = self_v_[size_t(l)];
  const int64_t W = W_;
  for (int64_t i = part.r0; i < part.r1; ++i) {
    const float* row = qkv_.data() + i * 3 * E_;  // queries (scaled), keys, values
    const int64_t at = (t * M + i) * E_;          // position t of row i: slot [t, i]
    std::memcpy(K + at, row + E_, size_t(E_) * sizeof(float));
    std::memcpy(Vc + at, row + 2 * E_, size_t(E_) * sizeof(float));
    kernels::mha::HeadRows r;
    r.H = H_, r.hd = hd_, r.n = t + 1, r.head_stride = hd_, r.offsets = offsets_.data() + i * (t + 1);
    r.q = row, r.keys = K, r.values = Vc, r.p = probs_.data() + i * H_ * W, r.ldp = W, r.ctx = ctx_.data() + i * E_;
    kernels::mha::attend(r);
  }
  part.sync();
}

void TransformerStepDecoder::cross_attend(const Part& part, int64_t l, const std::vector<int64_t>& rows) {
  const int64_t W = W_;
  for (int64_t i = part.r0; i < part.r1; ++i) {
    const int64_t b = rows[size_t(i)];
    kernels::mha::HeadRows r;
    r.H = H_, r.hd = hd_, r.n = len_[size_t(b)], r.head_stride = S_ * hd_, r.pos_stride = hd_;
    r.q = q_.data() + i * E_, r.keys = cross_k_[size_t(l)] + b * H_ * S_ * hd_;
    r.values = cross_v_[size_t(l)] + b * H_ * S_ * hd_;
    r.p = probs_.data() + i * H_ * W, r.ldp = W, r.ctx = ctx_.data() + i * E_;
    if (r.n > 0) kernels::mha::attend(r);
    else std::fill(r.ctx, r.ctx + E_, 0.0f);  // nothing to attend to (an empty source): zeros
    if (l != map_layer_) continue;
    // the one map asked for: [N, S], zeros past each length
    for (int64_t h = 0; h < H_; ++h) std::fill(r.p + h * W + r.n, r.p + (h + 1) * W, 0.0f);
    float* m = out_.attention.data() + i * S_;
    std::fill(m, m + S_, 0.0f);
    for (int64_t hh = 0; hh < H_; ++hh) {
      if (map_head_ > 0 && hh != map_head_ - 1) continue;
      const float w = map_head_ > 0 ? 1.0f : 1.0f / float(H_);
      const float* p = r.p + hh * W;
      for (int64_t j = 0; j < S_; ++j) m[j] += w * p[j];
    }
  }
  part.sync();
}

void TransformerStepDecoder::layer(const Part& part, int64_t l, const std::vector<int64_t>& rows, int64_t N, int64_t t,
                                   int64_t M) {
  const nn::TransformerDecoderLayer& d = *m_.decoder_stack().layers[size_t(l)];
  const PreparedDecoderLayer& w = p_->layers[size_t(l)];
  const bool gelu = d.options.activation == Activation::GELU;
  const Into act = gelu ? Into::Set : Into::Relu;  // the feed-forward's first product
  float *x = x_.data(), *h = h_.data(), *qkv = qkv_.data(), *q = q_.data(), *ctx = ctx_.data(), *ff = ff_.data();
  // pre-norm: x += sublayer(norm(x)); post-norm: x = norm(x + sublayer(x)), in place
  const bool pre = d.options.norm_first;
  auto input = [&](const nn::LayerNorm& n) {
    if (pre) norm_rows(part, n, x, h);
    return pre ? h : x;
  };
  auto output = [&](const nn::LayerNorm& n) {
    if (!pre) norm_rows(part, n, x, x);
  };
  product(part, w.qkv_self, input(*d.norm1), N, qkv, 3 * E_, Into::Set);
  self_attend(part, l, t, M);
  product(part, w.out_self, ctx, N, x, E_, Into::Residual);
  output(*d.norm1);
  product(part, w.q_cross, input(*d.norm2), N, q, E_, Into::Set);
  cross_attend(part, l, rows);
  product(part, w.out_cross, ctx, N, x, E_, Into::Residual);
  output(*d.norm2);
  product(part, w.ff1, input(*d.norm3), N, ff, F_, act, gelu);
  product(part, w.ff2, ff, N, x, E_, Into::Residual);
  output(*d.norm3);
}

const StepTop& TransformerStepDecoder::step(const std::vector<int64_t>& rows, DecoderState& state,
                                            const std::vector<int>& prev, int64_t k, int64_t t) {
  NoGradGuard no_grad;
  const int64_t N = int64_t(rows.size());
  detail::check_step_rows("transformer", rows, prev, k, B_, V_);
  if (state.rows() != N || !state.has("self_k.0"))
    throw std::invalid_argument("transformer decoder step: a state of " + std::to_string(state.rows()) + " rows for " +
                                std::to_string(N) + " (made by start()?)");
  if (t < 0 || t >= max_steps_)
    throw std::invalid_argument("transformer decoder step: t = " + std::to_string(t) + " outside the search's [0, " +
                                std::to_string(max_steps_) + ") (start()'s max_steps, at most max_positions)");
  if (t >= state.buffer("self_k.0").size(0))
    state.grow_time_axes(std::min(max_steps_, std::max(t + 1, 2 * state.buffer("self_k.0").size(0))));
  self_k_.clear(), self_v_.clear();
  for (int64_t l = 0; l < L_; ++l) {
    self_k_.push_back(state.data(cache_name("self_k", size_t(l))));
    self_v_.push_back(state.data(cache_name("self_v", size_t(l))));
  }
  slot_ = state.data("self_slot"), slot_stride_ = state.buffer("self_slot").size(1);
  const int64_t M = state.max_rows();
  // One parallel region for the whole step, its work split as Part says:
  // starting a team per product, with the layer norms and residual adds
  // between them serial, was a fifth of a batch-64 greedy search (perf, 2026-11-28).
  const bool par = num_threads() > 1 && N * E_ * V_ >= kParallelStepMacs;
  const int threads = par ? num_threads() : 1;
  reserve(N, t, threads);
  out_.attention = map_layer_ >= 0 ? Tensor::empty({N, S_}) : Tensor();
  logits_.begin(N, k, threads, out_);
#pragma omp parallel num_threads(threads)
  {
    const Part part = this->part(N, omp_get_thread_num(), omp_get_num_threads());
    locate_and_embed(part, prev, M, t);
    for (int64_t l = 0; l < L_; ++l) layer(part, l, rows, N, t, M);
    if (m_.decoder_stack().norm) norm_rows(part, *m_.decoder_stack().norm, x_.data(), h_.data());
#pragma omp barrier
    logits_.tiles(m_.decoder_stack().norm ? h_.data() : x_.data(), E_, omp_get_thread_num());
    logits_.merge(omp_get_thread_num(), omp_get_num_threads(), out_);
  }
  state.set_filled_steps(t + 1);
  return out_;
}

}  // namespace

std::unique_ptr<StepDecoder> make_transformer_decoder(const Transformer& model,
                                                      std::shared_ptr<const PreparedDecoder> prepared,
                                                      const EncoderMemory& memory) {
  auto p = std::dynamic_pointer_cast<const TransformerPrepared>(prepared);
  if (!p || p->model != &model)
    throw std::invalid_argument("transformer decoder: the prepared weights are not this transformer's");
  return std::make_unique<TransformerStepDecoder>(std::move(p), memory);
}

}  // namespace attn::models
