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
#include "attn/kernels/luong_rows.h"
#include "attn/models/step_logits.h"
#include "attn/models/step_packing.h"
#include "attn/models/transformer/transformer.h"
#include "attn/models/transformer/transformer_prepared.h"
#include "attn/nn/step_linear.h"

namespace attn::models {
namespace {

std::string cache_name(const char* what, size_t l) { return std::string(what) + "." + std::to_string(l); }

// One head's attention for one query: q [hd] (already scaled) over keys /
// values [n, hd] (rows contiguous, or position j at keys / values + offsets[j]
// when offsets is given) -> p [n] the weights, ctx [hd] their sum of values
// (the vectorised row kernel Luong's dot score also uses).
void attend(const float* q, const float* keys, const float* values, const int64_t* offsets, int64_t n, int64_t hd,
            float* p, float* ctx) {
  models::luong_kernels::DotAttend a;
  a.K = hd, a.Dv = hd, a.S = n, a.lo = 0, a.hi = n;
  a.q = q, a.keys = keys, a.values = values, a.offsets = offsets, a.a = p, a.w = p, a.c = ctx;
  models::luong_kernels::dot_attend(a);
}

class TransformerStepDecoder final : public StepDecoder {
public:
  TransformerStepDecoder(std::shared_ptr<const TransformerPrepared> p, const EncoderMemory& memory)
      : p_(std::move(p)), m_(*p_->model), memory_(memory), logits_(&p_->y, p_->b_y.data(), p_->w_y) {
    const TransformerConfig& s = m_.section();
    E_ = m_.config().embed, H_ = s.heads, hd_ = E_ / H_, L_ = s.decoder_layers, V_ = m_.config().tgt_vocab;
    B_ = memory_.lengths().size(0), S_ = memory_.values().size(1);
    for (int64_t b = 0; b < B_; ++b) len_.push_back(int64_t(memory_.lengths().data()[b]));
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
  // x [N, E] -> x after decoder layer l (pre- or post-norm residuals)
  Tensor layer(int64_t l, const Tensor& x, DecoderState& state, const std::vector<int64_t>& rows, int64_t t);
  // h [N, E] (normed) -> self-attention's output [N, E]; position t appended to the cache
  Tensor self_attention(int64_t l, const Tensor& h, DecoderState& state, int64_t t);
  // h [N, E] (normed) -> cross-attention's output [N, E]; the reported map written when l is its layer
  Tensor cross_attention(int64_t l, const Tensor& h, const std::vector<int64_t>& rows);
  // Row i's slot of position t is i; offsets_ [N, t + 1] <- where each row's
  // positions 0..t lie in the caches (floats from a cache's start, head 0).
  void locate_positions(DecoderState& state, int64_t N, int64_t t);
  bool parallel(int64_t N, int64_t keys) const { return num_threads() > 1 && N * H_ * keys * hd_ >= (int64_t(1) << 15); }

  std::shared_ptr<const TransformerPrepared> p_;
  const Transformer& m_;
  EncoderMemory memory_;
  detail::StepLogits logits_;
  StepTop out_;
  int64_t E_, H_, hd_, L_, V_, B_, S_;
  // The cache starts with this many positions (a batch's step limit, 1.5 x its
  // longest source + 5, is 35 for sources of 20 pieces), and doubles from there
  // for longer searches. Growing from 4 instead re-made and copied every cache
  // 4-5 times per search; sizing it by each batch's limit gave the pool a new
  // size per batch, so every search faulted fresh pages (zeroed by the kernel:
  // 10% of an int8 translation of Multi30k val, batch 64 beam 5; perf, 2026-11-28).
  static constexpr int64_t kFirstCacheSteps = 64;
  int64_t max_steps_ = 0;                   // the longest search start() was told of (within max_positions)
  std::vector<int64_t> len_;                // [B] source lengths
  int64_t map_layer_ = -1, map_head_ = -1;  // the reported map: 0-based layer, head 1..H or 0 (mean)
  std::vector<float> probs_;                // [N, H, max(S, T)] scratch for the weights
  nn::StepInput in_;                        // a product's input in the weights' type's form
  std::vector<int64_t> offsets_;            // [N, t + 1] locate_positions()'s
};

void TransformerStepDecoder::locate_positions(DecoderState& state, int64_t N, int64_t t) {
  const int64_t Tc = state.buffer("self_slot").size(1), M = state.max_rows();
  float* slot = state.data("self_slot");  // [M, Tc] slot numbers (exact in float up to 2^24)
  offsets_.resize(size_t(N * (t + 1)));
  for (int64_t i = 0; i < N; ++i) {
    slot[i * Tc + t] = float(i);
    for (int64_t p = 0; p <= t; ++p) offsets_[size_t(i * (t + 1) + p)] = (p * M + int64_t(slot[i * Tc + p])) * E_;
  }
}

Tensor TransformerStepDecoder::self_attention(int64_t l, const Tensor& h, DecoderState& state, int64_t t) {
  const PreparedDecoderLayer& w = p_->layers[size_t(l)];
  const int64_t N = h.size(0), M = state.max_rows();
  Tensor qkv = apply(w.qkv_self, in_, h);  // [N, 3E]: queries (scaled), keys, values
  float *K = state.data(cache_name("self_k", size_t(l))), *Vc = state.data(cache_name("self_v", size_t(l)));
  Tensor ctx = Tensor::empty({N, E_});
  const int64_t W = std::max(S_, t + 1);
  probs_.resize(size_t(N * H_ * W));
#pragma omp parallel for collapse(2) if (parallel(N, t + 1))
  for (int64_t i = 0; i < N; ++i)
    for (int64_t hh = 0; hh < H_; ++hh) {
      const float* row = qkv.data() + i * 3 * E_;
      const int64_t at = (t * M + i) * E_ + hh * hd_;  // position t of row i: slot [t, i]
      std::memcpy(K + at, row + E_ + hh * hd_, size_t(hd_) * sizeof(float));
      std::memcpy(Vc + at, row + 2 * E_ + hh * hd_, size_t(hd_) * sizeof(float));
      attend(row + hh * hd_, K + hh * hd_, Vc + hh * hd_, offsets_.data() + i * (t + 1), t + 1, hd_,
             probs_.data() + (i * H_ + hh) * W, ctx.data() + i * E_ + hh * hd_);
    }
  return apply(w.out_self, in_, ctx);
}

Tensor TransformerStepDecoder::cross_attention(int64_t l, const Tensor& h, const std::vector<int64_t>& rows) {
  const PreparedDecoderLayer& w = p_->layers[size_t(l)];
  const int64_t N = h.size(0), W = S_;
  Tensor q = apply(w.q_cross, in_, h);  // [N, E], scaled: W_Q only, the keys are the memory's
  const float* K = memory_.get(cache_name("cross_k", size_t(l))).data();
  const float* Vm = memory_.get(cache_name("cross_v", size_t(l))).data();
  Tensor ctx = Tensor::empty({N, E_});
  probs_.resize(size_t(N * H_ * W));
#pragma omp parallel for collapse(2) if (parallel(N, S_))
  for (int64_t i = 0; i < N; ++i)
    for (int64_t hh = 0; hh < H_; ++hh) {
      const int64_t b = rows[size_t(i)], off = (b * H_ + hh) * S_ * hd_;
      float* p = probs_.data() + (i * H_ + hh) * W;
      std::fill(p, p + W, 0.0f);
      attend(q.data() + i * E_ + hh * hd_, K + off, Vm + off, nullptr, len_[size_t(b)], hd_, p,
             ctx.data() + i * E_ + hh * hd_);
    }
  if (l == map_layer_) {  // the one map asked for: [N, S], zeros past each length
    Tensor& m = out_.attention = Tensor::zeros({N, S_});
    for (int64_t i = 0; i < N; ++i)
      for (int64_t hh = 0; hh < H_; ++hh) {
        if (map_head_ > 0 && hh != map_head_ - 1) continue;
        const float w = map_head_ > 0 ? 1.0f : 1.0f / float(H_);
        const float* p = probs_.data() + (i * H_ + hh) * W;
        for (int64_t j = 0; j < S_; ++j) m.data()[i * S_ + j] += w * p[j];
      }
  }
  return apply(w.out_cross, in_, ctx);
}

Tensor TransformerStepDecoder::layer(int64_t l, const Tensor& x, DecoderState& state, const std::vector<int64_t>& rows,
                                     int64_t t) {
  const nn::TransformerDecoderLayer& d = *m_.decoder_stack().layers[size_t(l)];
  const PreparedDecoderLayer& w = p_->layers[size_t(l)];
  const auto act = d.options.activation == Activation::GELU ? kernels::activation::Kind::GELU
                                                            : kernels::activation::Kind::ReLU;
  auto ff = [&](const Tensor& x) { return apply(w.ff2, in_, apply(w.ff1, in_, x, &act)); };
  if (d.options.norm_first) {
    Tensor h = add(x, self_attention(l, d.norm1->forward(x), state, t));
    h = add(h, cross_attention(l, d.norm2->forward(h), rows));
    return add(h, ff(d.norm3->forward(h)));
  }
  Tensor h = d.norm1->forward(add(x, self_attention(l, x, state, t)));
  h = d.norm2->forward(add(h, cross_attention(l, h, rows)));
  return d.norm3->forward(add(h, ff(h)));
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
  locate_positions(state, N, t);
  // x = sqrt(E) emb(prev) + PE(t)
  Tensor x = Tensor::empty({N, E_});
  const float scale = std::sqrt(float(E_)), *pe = m_.position_row(t), *emb = m_.target_embedding().weight.data();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t d = 0; d < E_; ++d) x.data()[i * E_ + d] = scale * emb[prev[size_t(i)] * E_ + d] + pe[d];
  out_.attention = Tensor();
  for (int64_t l = 0; l < L_; ++l) x = layer(l, x, state, rows, t);
  state.set_filled_steps(t + 1);
  if (m_.decoder_stack().norm) x = m_.decoder_stack().norm->forward(x);
  const bool par = num_threads() > 1 && N * E_ * V_ >= (int64_t(1) << 17);
  logits_.begin(N, k, par ? num_threads() : 1, out_);
#pragma omp parallel if (par)
  {
    logits_.tiles(x.data(), E_, omp_get_thread_num());
    logits_.merge(omp_get_thread_num(), omp_get_num_threads(), out_);
  }
  if (attention_map_.empty()) out_.attention = Tensor();
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
