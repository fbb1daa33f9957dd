// The fused RNNsearch search step (see the header): the phases and their
// buffers. The per-row loops are kernels/rnnsearch_rows.cpp, compiled per
// instruction set; the products go through nn::StepLinear and the GRU gates
// through rnn_kernels, both dispatched as well.
#include "attn/models/rnnsearch/rnnsearch_search.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"
#include "attn/kernels/rnn_gates.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/models/model_parts.h"
#include "attn/models/step_logits.h"
#include "attn/nn/step_linear.h"
#include "attn/tensor/kernels.h"

namespace attn::models {
namespace {


struct RnnSearchPrepared final : PreparedDecoder {
  int64_t V, E, A, Hd, G, Dv, R;
  Tensor embed, v, b_hh, w_y, b_y;  // [V, E] (unfolded only), [A], [G], [V, R] (y's source), [V] (copies; b_y undefined: none)
  Tensor zeros_g;              // [G]: gx already holds b_ih
  bool folded = false;
  Tensor t_ih, t_o;            // folded: [V, G] and [V, R] tables (see the header)
  Tensor b_ih, b_o;            // unfolded: the biases the per-step products start from
  Tensor w_ctx;                // [G + R, Dv]: W_ih[:, E:] over W_o[:, Hd:Hd+Dv] (the context's products, folded)
  nn::StepLinear q, hh, ihc, os, oc, y;  // W_a, W_hh, W_ih[:, E:], W_o[:, :Hd], W_o[:, Hd:Hd+Dv], W_y
  nn::StepLinear ie, oe;                 // unfolded: W_ih[:, :E], W_o[:, Hd+Dv:]
};

// One step's arguments, as the phases read them.
struct StepCall {
  int64_t N = 0, k = 0;
  const int64_t* rows = nullptr;  // [N] row -> sentence
  const int* prev = nullptr;      // [N] previous tokens
  float* s = nullptr;             // [N, Hd] the states: s before the step, s' after (in place)
  bool par = false;
};

class RnnSearchStepDecoder final : public StepDecoder {
public:
  RnnSearchStepDecoder(std::shared_ptr<const RnnSearchPrepared> p, const EncoderMemory& m, int64_t max_rows,
                       ContextProducts context);
  const StepTop& step(const std::vector<int64_t>& rows, DecoderState& state, const std::vector<int>& prev, int64_t k,
                      int64_t t) override;
  void report_attention(const std::string& map) override {
    attention_map_ = detail::check_one_attention_map("rnnsearch", map);
  }
  void restrict_vocabulary(const std::vector<int>& tokens) override { logits_.restrict(tokens); }

private:
  void check(const std::vector<int64_t>& rows, const DecoderState& state, const std::vector<int>& prev,
             int64_t k) const;
  void reserve(int64_t rows);
  void fold_context(const EncoderMemory& m);
  // The phases, called by every thread of the step's parallel region (each an omp for).
  void start_rows(const StepCall& c);
  void state_products(const StepCall& c);
  void attend_rows(const StepCall& c);
  void context_products(const StepCall& c);
  void gru_rows(const StepCall& c);
  void readout(const StepCall& c);

  std::shared_ptr<const RnnSearchPrepared> p_;
  Tensor keys_, values_;
  std::vector<int64_t> len_;  // [B] source lengths
  int64_t B_, S_, A_, Dv_, E_, Hd_, G_, R_, V_;
  int64_t Xo_;  // row width of xo_ = [s'; c] (the readout's input; c is also the GRU's)
  int64_t macs_per_row_;
  int64_t cap_ = 0;  // rows the buffers hold
  bool ctx_folded_ = false;
  Tensor ctx_;                     // folded: [sum_b len_b, G + R] = values W_ctx^T, the sentences' valid rows
  std::vector<int64_t> ctx_row_;   // [B] sentence b's first row in ctx_
  Tensor xo_, xe_, qp_, gh_, gx_, t_, weights_;  // xe_: embeddings (unfolded only)
  std::vector<float*> y_rows_, next_rows_;
  detail::StepLogits logits_;  // the vocabulary projection's tiles and top k
  nn::StepInput in_s_, in_e_, in_c_, in_o_;  // the products' inputs (s, embeddings, context, s') in their type's form
  StepTop out_;
};

bool fits(const Tensor& t, std::initializer_list<int64_t> dims) {
  if (!t.defined() || t.dim() != int(dims.size())) return false;
  int axis = 0;
  for (int64_t d : dims)
    if (t.size(axis++) != d) return false;
  return true;
}

}  // namespace

std::shared_ptr<const PreparedDecoder> prepare_rnnsearch_decoder(const RnnSearchStepWeights& w, StepLayout layout,
                                                                 bool fold) {
  auto p = std::make_shared<RnnSearchPrepared>();
  bool ok = w.embed.defined() && w.W_a.defined() && w.w_hh.defined() && w.w_o.defined() && w.w_y.defined() &&
            w.embed.dim() == 2 && w.W_a.dim() == 2 && w.w_hh.dim() == 2 && w.w_o.dim() == 2 && w.w_y.dim() == 2;
  int64_t Xi = 0, Xo = 0;
  if (ok) {
    p->V = w.embed.size(0), p->E = w.embed.size(1), p->A = w.W_a.size(0), p->Hd = w.W_a.size(1), p->G = 3 * p->Hd;
    p->R = w.w_o.size(0);
    Xo = w.w_o.size(1), p->Dv = Xo - p->Hd - p->E, Xi = p->E + p->Dv;
    ok = p->Dv >= 1 && fits(w.v, {p->A}) && fits(w.w_ih, {p->G, Xi}) && fits(w.w_hh, {p->G, p->Hd}) &&
         fits(w.w_y, {p->V, p->R}) && (!w.b_ih.defined() || fits(w.b_ih, {p->G})) &&
         (!w.b_hh.defined() || fits(w.b_hh, {p->G})) && (!w.b_o.defined() || fits(w.b_o, {p->R})) &&
         (!w.b_y.defined() || fits(w.b_y, {p->V}));
  }
  if (!ok)
    throw std::invalid_argument(
        "rnnsearch decoder: embed " + shape_str(w.embed) + ", W_a " + shape_str(w.W_a) + ", v " + shape_str(w.v) +
        ", w_ih " + shape_str(w.w_ih) + ", w_hh " + shape_str(w.w_hh) + ", w_o " + shape_str(w.w_o) + ", w_y " +
        shape_str(w.w_y) +
        " (expects embed [V, E], W_a [A, Hd], v [A], w_ih [3Hd, E + Dv], w_hh [3Hd, Hd], w_o [R, Hd + Dv + E], "
        "w_y [V, R], biases of the output sizes)");
  const int64_t V = p->V, E = p->E, G = p->G, R = p->R, Hd = p->Hd, Dv = p->Dv;
  const bool packed = layout.packed;
  const nn::StepWeightType type = layout.type;
  p->v = w.v.detach().clone();
  p->b_hh = or_zeros(w.b_hh, {G}).detach().clone();
  if (w.b_y.defined()) p->b_y = w.b_y.detach().clone();
  p->zeros_g = Tensor::zeros({G});
  p->q = nn::StepLinear(w.W_a.detach().clone(), packed, type);
  p->hh = nn::StepLinear(w.w_hh.detach().clone(), packed, type);
  p->ihc = nn::StepLinear(detail::columns(w.w_ih, E, Dv), packed, type);
  p->os = nn::StepLinear(detail::columns(w.w_o, 0, Hd), packed, type);
  p->oc = nn::StepLinear(detail::columns(w.w_o, Hd, Dv), packed, type);
  p->w_ctx = Tensor::empty({G + R, Dv});
  std::memcpy(p->w_ctx.data(), detail::columns(w.w_ih, E, Dv).data(), size_t(G * Dv) * sizeof(float));
  std::memcpy(p->w_ctx.data() + G * Dv, detail::columns(w.w_o, Hd, Dv).data(), size_t(R * Dv) * sizeof(float));
  p->w_y = w.w_y.detach().clone();
  p->y = nn::StepLinear(p->w_y, packed, type);
  p->folded = fold && V * (G + R) <= kMaxFoldedFloats;
  const Tensor b_ih = or_zeros(w.b_ih, {G}).detach().clone(), b_o = or_zeros(w.b_o, {R}).detach().clone();
  if (p->folded) {
    // T_ih = E W_ih[:, :E]^T + b_ih and T_o = E W_o[:, Hd+Dv:]^T + b_o: two GEMMs over the vocabulary, once
    p->t_ih = Tensor::empty({V, G});
    p->t_o = Tensor::empty({V, R});
    for (int64_t r = 0; r < V; ++r) {
      std::memcpy(p->t_ih.data() + r * G, b_ih.data(), size_t(G) * sizeof(float));
      std::memcpy(p->t_o.data() + r * R, b_o.data(), size_t(R) * sizeof(float));
    }
    kernels::gemm(false, true, V, G, E, 1.0f, w.embed.data(), E, w.w_ih.data(), Xi, 1.0f, p->t_ih.data(), G);
    kernels::gemm(false, true, V, R, E, 1.0f, w.embed.data(), E, w.w_o.data() + Hd + Dv, Xo, 1.0f, p->t_o.data(), R);
  } else {
    p->embed = w.embed.detach().clone();
    p->b_ih = b_ih, p->b_o = b_o;
    p->ie = nn::StepLinear(detail::columns(w.w_ih, 0, E), packed, type);
    p->oe = nn::StepLinear(detail::columns(w.w_o, Hd + Dv, E), packed, type);
  }
  return p;
}

namespace {

RnnSearchStepDecoder::RnnSearchStepDecoder(std::shared_ptr<const RnnSearchPrepared> p, const EncoderMemory& m,
                                           int64_t max_rows, ContextProducts context)
    : p_(std::move(p)), keys_(m.keys()), values_(m.values()),
      logits_(&p_->y, p_->b_y.defined() ? p_->b_y.data() : nullptr, p_->w_y) {
  V_ = p_->V, E_ = p_->E, A_ = p_->A, Hd_ = p_->Hd, G_ = p_->G, Dv_ = p_->Dv, R_ = p_->R;
  const bool ok = keys_.defined() && values_.defined() && keys_.dim() == 3 && values_.dim() == 3 &&
                  fits(keys_, {keys_.size(0), keys_.size(1), A_}) &&
                  fits(values_, {keys_.size(0), keys_.size(1), Dv_}) && fits(m.lengths(), {keys_.size(0)});
  if (!ok)
    throw std::invalid_argument("rnnsearch decoder: keys " + shape_str(keys_) + ", values " + shape_str(values_) +
                                ", lengths " + shape_str(m.lengths()) + " (expects keys [B, S, " + std::to_string(A_) +
                                "], values [B, S, " + std::to_string(Dv_) + "], lengths [B])");
  B_ = keys_.size(0), S_ = keys_.size(1);
  Xo_ = Hd_ + Dv_;
  len_ = lengths_in_range("rnnsearch decoder", "lengths", m.lengths(), S_);
  ctx_folded_ = context == ContextProducts::Folded || (context == ContextProducts::Auto && 2 * S_ <= Dv_);
  macs_per_row_ = A_ * Hd_ + G_ * Hd_ + R_ * Hd_ + V_ * R_ + S_ * A_ + (ctx_folded_ ? S_ : Dv_) * (G_ + R_) +
                  (ctx_folded_ ? 0 : S_ * Dv_) + (p_->folded ? 0 : E_ * (G_ + R_));
  if (ctx_folded_) fold_context(m);
  reserve(std::max<int64_t>(1, max_rows));
}

// ctx_ = h W_ctx^T over the sentences' valid rows (one GEMM): a step then adds
// sum_j a_j ctx_j to gx and t instead of multiplying c (see the header).
void RnnSearchStepDecoder::fold_context(const EncoderMemory& m) {
  ctx_row_.resize(size_t(B_));
  int64_t rows = 0;
  for (int64_t b = 0; b < B_; ++b) ctx_row_[size_t(b)] = rows, rows += len_[size_t(b)];
  ctx_ = Tensor::empty({std::max<int64_t>(rows, 1), G_ + R_});
  if (rows == 0) return;
  Tensor h = Tensor::empty({rows, Dv_});
  for (int64_t b = 0; b < B_; ++b)
    std::memcpy(h.data() + ctx_row_[size_t(b)] * Dv_, m.values().data() + b * S_ * Dv_,
                size_t(len_[size_t(b)] * Dv_) * sizeof(float));
  kernels::gemm(false, true, rows, G_ + R_, Dv_, 1.0f, h.data(), Dv_, p_->w_ctx.data(), Dv_, 0.0f, ctx_.data(),
                G_ + R_);
}

void RnnSearchStepDecoder::reserve(int64_t rows) {
  if (rows <= cap_) return;
  cap_ = rows;
  xo_ = Tensor::empty({rows, Xo_});
  if (!p_->folded) xe_ = Tensor::empty({rows, E_});
  qp_ = Tensor::empty({rows, A_});
  gh_ = Tensor::empty({rows, G_});
  gx_ = Tensor::empty({rows, G_});
  t_ = Tensor::empty({rows, R_});
  weights_ = Tensor::empty({rows, S_});
  y_rows_.resize(size_t(rows));
  next_rows_.resize(size_t(rows));
}

void RnnSearchStepDecoder::check(const std::vector<int64_t>& rows, const DecoderState& state,
                                 const std::vector<int>& prev, int64_t k) const {
  const int64_t N = int64_t(rows.size());
  const Tensor* s = state.has("s") ? &state.buffer("s") : nullptr;
  if (state.buffers().size() != 1 || !s || s->dim() != 2 || state.rows() != N || s->size(1) != Hd_ ||
      int64_t(prev.size()) != N)
    throw std::invalid_argument("rnnsearch decoder step: expects state {s [N, Hd]} and prev [N] for N = " +
                                std::to_string(N) + " rows");
  detail::check_step_rows("rnnsearch", rows, prev, k, B_, V_);
}

// 1a. gx and t start from the previous token's table rows (unfolded: from the
// biases, and the embedding goes into xe)
void RnnSearchStepDecoder::start_rows(const StepCall& c) {
  const RnnSearchPrepared& p = *p_;
  const int64_t G = G_, R = R_, E = E_;
  float *gx = gx_.data(), *tt = t_.data();
#pragma omp for schedule(dynamic, 16) nowait
  for (int64_t i = 0; i < c.N; ++i) {
    const int64_t y = c.prev[i];
    if (p.folded) {
      std::memcpy(gx + i * G, p.t_ih.data() + y * G, size_t(G) * sizeof(float));
      std::memcpy(tt + i * R, p.t_o.data() + y * R, size_t(R) * sizeof(float));
    } else {
      std::memcpy(gx + i * G, p.b_ih.data(), size_t(G) * sizeof(float));
      std::memcpy(tt + i * R, p.b_o.data(), size_t(R) * sizeof(float));
      std::memcpy(xe_.data() + i * E, p.embed.data() + y * E, size_t(E) * sizeof(float));
    }
  }
  if (!p.folded) {
#pragma omp barrier
  }
}

// 1b. qp = s W_a^T and gh = s W_hh^T (unfolded: also the embedding's products),
// one loop over the products' columns
void RnnSearchStepDecoder::state_products(const StepCall& c) {
  const RnnSearchPrepared& p = *p_;
  const int64_t N = c.N, Hd = Hd_, E = E_, G = G_, R = R_;
  const int64_t uq = p.q.units(), uh = uq + p.hh.units(), ui = uh + (p.folded ? 0 : p.ie.units()),
                u1 = ui + (p.folded ? 0 : p.oe.units());
  const nn::StepRows s = nn::shared_rows(in_s_, p.q.type(), N, Hd, c.s, Hd);
  const nn::StepRows e = p.folded ? nn::StepRows{} : nn::shared_rows(in_e_, p.q.type(), N, E, xe_.data(), E);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < u1; ++u) {
    if (u < uq)
      p.q.apply(s, u, u + 1, qp_.data(), A_);
    else if (u < uh)
      p.hh.apply(s, u - uq, u - uq + 1, gh_.data(), G);
    else if (u < ui)
      p.ie.apply(e, u - uh, u - uh + 1, gx_.data(), G, true);
    else
      p.oe.apply(e, u - ui, u - ui + 1, t_.data(), R, true);
  }
}

// 2. each row's attention weights from its sentence's keys; then its context:
// folded, gx += sum_j a_j ctx_j[:G] and t += sum_j a_j ctx_j[G:]; else c into xo.
// Beams of one sentence are neighbours: the next sentence's keys are fetched
// meanwhile only where the row after this one changes sentence.
void RnnSearchStepDecoder::attend_rows(const StepCall& c) {
  const int64_t S = S_, A = A_, Dv = Dv_, G = G_, R = R_, W = G_ + R_;
  const float* v = p_->v.data();
#pragma omp for schedule(dynamic, 4)
  for (int64_t i = 0; i < c.N; ++i) {
    const int64_t b = c.rows[i], next = i + 1 < c.N && c.rows[i + 1] != b ? c.rows[i + 1] : -1;
    const int64_t L = len_[size_t(b)];
    const float* q = qp_.data() + i * A;
    const float* kb = keys_.data() + b * S * A;
    const float* next_k = next >= 0 ? keys_.data() + next * S * A : nullptr;
    const int64_t next_floats = next >= 0 ? len_[size_t(next)] * A : 0;
    float* w = weights_.data() + i * S;
    if (ctx_folded_) {
      const float* cb = ctx_.data() + ctx_row_[size_t(b)] * W;
      rnnsearch_kernels::attention_weights_row(q, kb, v, A, L, S, w, cb, W);
      rnnsearch_kernels::weighted_rows_add(w, L, cb, W, G, gx_.data() + i * G, next_k, next_floats);
      rnnsearch_kernels::weighted_rows_add(w, L, cb + G, W, R, t_.data() + i * R);
    } else {
      rnnsearch_kernels::attend_row(q, kb, v, A, values_.data() + b * S * Dv, Dv, L, S, w,
                                    xo_.data() + i * Xo_ + Hd_, next_k, next_floats);
    }
  }
}

// 3. per step (not folded): gx += c W_ih[:, E:]^T and t += c W_o[:, Hd:Hd+Dv]^T
void RnnSearchStepDecoder::context_products(const StepCall& c) {
  const RnnSearchPrepared& p = *p_;
  const nn::StepRows ctx = nn::shared_rows(in_c_, p.ihc.type(), c.N, Dv_, xo_.data() + Hd_, Xo_);
  const int64_t ui = p.ihc.units(), u1 = ui + p.oc.units();
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < u1; ++u) {
    if (u < ui)
      p.ihc.apply(ctx, u, u + 1, gx_.data(), G_, true);
    else
      p.oc.apply(ctx, u - ui, u - ui + 1, t_.data(), R_, true);
  }
}

// 4. s' = GRU(gx, gh, s) in blocks of whole rows (b_ih is in gx already), into the
// state in place (each unit reads its s before it writes s') and the readout's input. Whole rows
// stream each gate block sequentially; chunks of hidden units over every row (6 KB
// apart) left the prefetchers behind: the gate pass waited on its loads.
void RnnSearchStepDecoder::gru_rows(const StepCall& c) {
  constexpr int64_t kGruRows = 8;
  const int64_t N = c.N, G = G_, Hd = Hd_;
#pragma omp for schedule(dynamic, 1)
  for (int64_t i0 = 0; i0 < N; i0 += kGruRows) {
    rnn_kernels::GruForward a;
    a.n = std::min(kGruRows, N - i0), a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
    a.gates = gx_.data() + i0 * G, a.gh = gh_.data() + i0 * G, a.b_ih = p_->zeros_g.data(), a.b_hh = p_->b_hh.data();
    a.h_prev = c.s + i0 * Hd, a.y_rows = y_rows_.data() + i0, a.next_rows = next_rows_.data() + i0;
    rnn_kernels::gru_forward(a);  // ghn null: nothing kept for a backward
  }
}

// 5. t = tanh(t + s' W_o[:, :Hd]^T), tanh on each unit's columns as they are done
void RnnSearchStepDecoder::readout(const StepCall& c) {
  const nn::StepLinear& os = p_->os;
  const nn::StepRows s = nn::shared_rows(in_o_, os.type(), c.N, Hd_, xo_.data(), Xo_);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < os.units(); ++u) {
    os.apply(s, u, u + 1, t_.data(), R_, true);
    const int64_t c0 = u * nn::StepLinear::kUnit;
    rnnsearch_kernels::tanh_columns(t_.data(), R_, c.N, c0, c0 + os.unit_cols(u));
  }
}

const StepTop& RnnSearchStepDecoder::step(const std::vector<int64_t>& rows, DecoderState& state,
                                          const std::vector<int>& prev, int64_t k, int64_t t) {
  (void)t;  // the recurrence carries all it needs in s
  check(rows, state, prev, k);
  StepCall c;
  c.N = int64_t(rows.size()), c.k = k, c.rows = rows.data(), c.prev = prev.data(), c.s = state.data("s");
  const int64_t N = c.N;
  reserve(N);
  for (int64_t i = 0; i < N; ++i) {
    y_rows_[size_t(i)] = xo_.data() + i * Xo_;  // s' is the first part of the readout input ...
    next_rows_[size_t(i)] = c.s + i * Hd_;      // ... and the next state, over the previous one
  }
  c.par = num_threads() > 1 && N * macs_per_row_ >= kParallelStepMacs;
  logits_.begin(N, k, c.par ? num_threads() : 1, out_);
  // Work is handed out in small chunks (schedule dynamic), so that a thread that
  // shares its core with another process takes fewer chunks instead of holding
  // up the barrier (statically split, such a step ran 1.6x slower on 2 threads
  // than on 1). Every chunk's result is the same whichever thread computes it.
#pragma omp parallel if (c.par)
  {
    start_rows(c);
    state_products(c);
    attend_rows(c);
    if (!ctx_folded_) context_products(c);
    gru_rows(c);
    readout(c);
    logits_.tiles(t_.data(), R_, omp_get_thread_num());  // 6. logits = t W_y^T + b_y, and the top k
    logits_.merge(omp_get_thread_num(), omp_get_num_threads(), out_);
  }
  // the weights stay in their buffer (the context needs them); a view of them only when asked
  out_.attention = attention_map_.empty() ? Tensor() : weights_.narrow0(0, N);
  return out_;
}

}  // namespace

std::unique_ptr<StepDecoder> make_rnnsearch_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                    const EncoderMemory& memory, int64_t max_rows,
                                                    ContextProducts context) {
  auto p = std::dynamic_pointer_cast<const RnnSearchPrepared>(prepared);
  if (!p) throw std::invalid_argument("rnnsearch decoder: the prepared weights are not an rnnsearch decoder's");
  return std::make_unique<RnnSearchStepDecoder>(std::move(p), memory, max_rows, context);
}

}  // namespace attn::models
