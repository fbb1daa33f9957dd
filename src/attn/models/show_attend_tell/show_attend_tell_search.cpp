// The fused captioner search step (see the header): the prepared weights, the
// phases of a step and their buffers.
#include "attn/models/show_attend_tell/show_attend_tell_search.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"
#include "attn/kernels/rnn_gates.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/models/model_parts.h"
#include "attn/models/step_logits.h"
#include "attn/nn/step_linear.h"

namespace attn::models {
namespace {


struct CaptionerPrepared final : PreparedDecoder {
  ImageAttention attention = ImageAttention::Soft;
  int64_t V = 0, E = 0, Hd = 0, G = 0, D = 0, A = 0;  // G = 4 Hd
  Tensor embed;                       // [V, E]
  Tensor v;                           // [A] (undefined for none)
  Tensor gate_w;                      // [Hd] f_beta's one row
  float gate_b = 0.0f;
  Tensor b_ih, b_hh;                  // [G] each
  Tensor out_w, out_b;                // L_o [V, E] (y's source), [V] or undefined
  nn::StepLinear q, ih, hh, oh, oz, y;  // W [A, Hd] (not for none), W_ih [G, E + D], W_hh [G, Hd], L_h, L_z, L_o
};

using detail::fits;

// Every weight of w as [V, E], [A, Hd], ... for the sizes the embedding, W_hh and L_z imply.
void check_weights(const ShowAttendTellStepWeights& w) {
  bool ok = w.embed.defined() && w.embed.dim() == 2 && w.w_hh.defined() && w.w_hh.dim() == 2 && w.out_z.defined() &&
            w.out_z.dim() == 2;
  if (ok) {
    const int64_t V = w.embed.size(0), E = w.embed.size(1), Hd = w.w_hh.size(1), G = 4 * Hd, D = w.out_z.size(1);
    ok = fits(w.w_hh, {G, Hd}) && fits(w.w_ih, {G, E + D}) && fits(w.out_z, {E, D}) && fits(w.out_h, {E, Hd}) &&
         fits(w.out_w, {V, E}) && (!w.out_b.defined() || fits(w.out_b, {V})) && fits(w.gate_w, {1, Hd}) &&
         (!w.gate_b.defined() || fits(w.gate_b, {1})) && (!w.b_ih.defined() || fits(w.b_ih, {G})) &&
         (!w.b_hh.defined() || fits(w.b_hh, {G}));
    if (ok && w.attention != ImageAttention::None)
      ok = w.query_w.defined() && w.query_w.dim() == 2 && w.query_w.size(1) == Hd && fits(w.v, {w.query_w.size(0)});
  }
  if (!ok)
    throw std::invalid_argument("show_attend_tell decoder: embed " + shape_str(w.embed) + ", W_ih " +
                                shape_str(w.w_ih) + ", W_hh " + shape_str(w.w_hh) + ", L_z " + shape_str(w.out_z) +
                                ", L_o " + shape_str(w.out_w) + ", W " + shape_str(w.query_w) +
                                " (expects embed [V, E], W_ih [4Hd, E + D], W_hh [4Hd, Hd], L_h [E, Hd], L_z [E, D], "
                                "L_o [V, E], f_beta [1, Hd], W [A, Hd], v [A])");
}


}  // namespace

std::shared_ptr<const PreparedDecoder> prepare_show_attend_tell_decoder(const ShowAttendTellStepWeights& w,
                                                                        StepLayout layout) {
  check_weights(w);
  auto p = std::make_shared<CaptionerPrepared>();
  const bool packed = layout.packed;
  const nn::StepWeightType type = layout.type;
  p->attention = w.attention;
  p->V = w.embed.size(0), p->E = w.embed.size(1), p->Hd = w.w_hh.size(1), p->G = 4 * p->Hd, p->D = w.out_z.size(1);
  p->embed = detail::detached_copy(w.embed);
  if (w.attention != ImageAttention::None) {
    p->A = w.query_w.size(0);
    p->q = nn::StepLinear(detail::detached_copy(w.query_w), packed, type);
    p->v = detail::detached_copy(w.v);
  }
  p->gate_w = detail::detached_copy(w.gate_w).view({p->Hd});
  p->gate_b = w.gate_b.defined() ? w.gate_b.data()[0] : 0.0f;
  p->ih = nn::StepLinear(detail::detached_copy(w.w_ih), packed, type);
  p->hh = nn::StepLinear(detail::detached_copy(w.w_hh), packed, type);
  p->b_ih = or_zeros(w.b_ih, {p->G}).detach().clone();
  p->b_hh = or_zeros(w.b_hh, {p->G}).detach().clone();
  p->oh = nn::StepLinear(detail::detached_copy(w.out_h), packed, type);
  p->oz = nn::StepLinear(detail::detached_copy(w.out_z), packed, type);
  p->out_w = detail::detached_copy(w.out_w);
  p->y = nn::StepLinear(p->out_w, packed, type);
  p->out_b = detail::detached_copy(w.out_b);
  return p;
}

namespace {

// One step's arguments, as the phases read them.
struct StepCall {
  int64_t N = 0;
  const int64_t* rows = nullptr;  // [N] row -> image
  const int* prev = nullptr;      // [N] previous tokens
  float* h = nullptr;             // [N, Hd] h_{t-1} until the cell runs, then h_t (in place)
  float* c = nullptr;             // [N, Hd] c likewise
};

class CaptionerStepDecoder final : public StepDecoder {
public:
  CaptionerStepDecoder(std::shared_ptr<const CaptionerPrepared> p, const EncoderMemory& m, int64_t max_rows);
  const StepTop& step(const std::vector<int64_t>& rows, DecoderState& state, const std::vector<int>& prev, int64_t k,
                      int64_t t) override;
  void report_attention(const std::string& map) override {
    attention_map_ = detail::check_one_attention_map("show_attend_tell", map);
  }
  void restrict_vocabulary(const std::vector<int>& tokens) override { logits_.restrict(tokens); }

private:
  void check(const std::vector<int64_t>& rows, const DecoderState& state, const std::vector<int>& prev,
             int64_t k) const;
  void reserve(int64_t rows);
  // The phases, called by every thread of the step's parallel region (each an omp for).
  void start_rows(const StepCall& c);
  void state_products(const StepCall& c);
  void attend_rows(const StepCall& c);
  void input_products(const StepCall& c);
  void cell_rows(const StepCall& c);
  void output_products(const StepCall& c);

  std::shared_ptr<const CaptionerPrepared> p_;
  Tensor keys_, values_;      // [B, L, A] (none: the values), [B, L, D]
  Tensor mean_;               // none: [B, D] each image's mean annotation
  std::vector<int64_t> len_;  // [B] cells per image (L)
  int64_t B_ = 0, L_ = 0, X_ = 0;  // X_ = E + D, the width of x_
  int64_t macs_per_row_ = 0;
  int64_t cap_ = 0;  // rows the buffers hold
  // x_ [rows, E + D] = [E y; z], qp_ [rows, A], gh_ / gx_ [rows, 4Hd], tanh_c_ [rows, Hd],
  // feat_ [rows, E] the deep output's features, weights_ [rows, L] alpha
  Tensor x_, qp_, gh_, gx_, tanh_c_, feat_, weights_;
  detail::StepLogits logits_;
  nn::StepInput in_h_, in_x_, in_z_;  // the products' inputs (h, [E y; z], z) in their type's form
  StepTop out_;
};

CaptionerStepDecoder::CaptionerStepDecoder(std::shared_ptr<const CaptionerPrepared> p, const EncoderMemory& m,
                                           int64_t max_rows)
    : p_(std::move(p)), keys_(m.keys()), values_(m.values()),
      logits_(&p_->y, p_->out_b.defined() ? p_->out_b.data() : nullptr, p_->out_w) {
  const CaptionerPrepared& q = *p_;
  const bool none = q.attention == ImageAttention::None;
  const bool ok = keys_.defined() && values_.defined() && keys_.dim() == 3 && values_.dim() == 3 &&
                  values_.size(0) == keys_.size(0) && values_.size(1) == keys_.size(1) && values_.size(2) == q.D &&
                  values_.size(1) >= 1 && (none || keys_.size(2) == q.A) && fits(m.lengths(), {keys_.size(0)});
  if (!ok)
    throw std::invalid_argument("show_attend_tell decoder: keys " + shape_str(keys_) + ", values " +
                                shape_str(values_) + ", lengths " + shape_str(m.lengths()) + " (expects values [B, L, " +
                                std::to_string(q.D) + "], keys [B, L, " + std::to_string(q.A) + "], lengths [B])");
  B_ = values_.size(0), L_ = values_.size(1), X_ = q.E + q.D;
  len_ = lengths_in_range("show_attend_tell decoder", "lengths", m.lengths(), L_);
  if (none) {  // the context never changes: mean_i a_i per image, once
    mean_ = Tensor::zeros({B_, q.D});
    for (int64_t b = 0; b < B_; ++b) {
      float* mb = mean_.data() + b * q.D;
      for (int64_t i = 0; i < L_; ++i)
        for (int64_t d = 0; d < q.D; ++d) mb[d] += values_.data()[(b * L_ + i) * q.D + d];
      for (int64_t d = 0; d < q.D; ++d) mb[d] /= float(L_);
    }
  }
  macs_per_row_ = q.A * q.Hd + q.G * (q.Hd + X_) + q.Hd + q.E * (q.Hd + q.D) + q.V * q.E + L_ * (q.A + q.D);
  reserve(std::max<int64_t>(1, max_rows));
}

void CaptionerStepDecoder::reserve(int64_t rows) {
  if (rows <= cap_) return;
  cap_ = rows;
  const CaptionerPrepared& p = *p_;
  x_ = Tensor::empty({rows, X_});
  qp_ = Tensor::empty({rows, std::max<int64_t>(p.A, 1)});
  gh_ = Tensor::empty({rows, p.G});
  gx_ = Tensor::empty({rows, p.G});
  tanh_c_ = Tensor::empty({rows, p.Hd});
  feat_ = Tensor::empty({rows, p.E});
  weights_ = Tensor::empty({rows, L_});
}

// state {h, c} [N, Hd] each and nothing else, prev [N], rows [N] images in [0, B), k in [1, V]
void CaptionerStepDecoder::check(const std::vector<int64_t>& rows, const DecoderState& state,
                                 const std::vector<int>& prev, int64_t k) const {
  const int64_t N = int64_t(rows.size()), Hd = p_->Hd;
  auto fits_state = [&](const char* name) {
    return state.has(name) && state.buffer(name).dim() == 2 && state.buffer(name).size(1) == Hd;
  };
  if (state.buffers().size() != 2 || !fits_state("h") || !fits_state("c") || state.rows() != N ||
      int64_t(prev.size()) != N)
    throw std::invalid_argument("show_attend_tell decoder step: expects the state {h, c} [N, " + std::to_string(Hd) +
                                "] from encode()/step() and prev [N] for N = " + std::to_string(N) + " rows");
  detail::check_step_rows("show_attend_tell", rows, prev, k, B_, p_->V);
}

// 1. each row's embedding E[y] [E] into x_'s first E columns and into the features
void CaptionerStepDecoder::start_rows(const StepCall& c) {
  const CaptionerPrepared& p = *p_;
  const int64_t E = p.E;
#pragma omp for schedule(static)
  for (int64_t i = 0; i < c.N; ++i) {
    const float* e = p.embed.data() + int64_t(c.prev[i]) * E;
    std::memcpy(x_.data() + i * X_, e, size_t(E) * sizeof(float));
    std::memcpy(feat_.data() + i * E, e, size_t(E) * sizeof(float));
  }
}

// 2. the products of h_{t-1} [N, Hd], one loop over their columns: qp = h W^T [N, A], gh = h W_hh^T [N, 4Hd]
void CaptionerStepDecoder::state_products(const StepCall& c) {
  const CaptionerPrepared& p = *p_;
  const int64_t uq = p.q.units(), uh = uq + p.hh.units();
  const nn::StepRows h = nn::shared_rows(in_h_, p.hh.type(), c.N, p.Hd, c.h, p.Hd);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < uh; ++u) {
    if (u < uq)
      p.q.apply(h, u, u + 1, qp_.data(), p.A);
    else
      p.hh.apply(h, u - uq, u - uq + 1, gh_.data(), p.G);
  }
}

// 3. per row: beta = sigmoid(f_beta h + b); alpha [L] into weights_; z = beta ctx [D] into x_'s last D columns
void CaptionerStepDecoder::attend_rows(const StepCall& c) {
  const CaptionerPrepared& p = *p_;
  const int64_t L = L_, D = p.D, A = p.A, Hd = p.Hd;
#pragma omp for schedule(dynamic, 4)
  for (int64_t i = 0; i < c.N; ++i) {
    const int64_t b = c.rows[i];
    const float* hi = c.h + i * Hd;
    float g = p.gate_b;
    for (int64_t j = 0; j < Hd; ++j) g += p.gate_w.data()[j] * hi[j];
    const float beta = 1.0f / (1.0f + std::exp(-g));
    const float* vb = values_.data() + b * L * D;
    float *w = weights_.data() + i * L, *z = x_.data() + i * X_ + p.E;
    switch (p.attention) {
      case ImageAttention::Soft:
        rnnsearch_kernels::attend_row(qp_.data() + i * A, keys_.data() + b * L * A, p.v.data(), A, vb, D,
                                      len_[size_t(b)], L, w, z);
        break;
      case ImageAttention::Hard: {  // eval mode: the argmax cell (its first maximum), weights alpha
        rnnsearch_kernels::attention_weights_row(qp_.data() + i * A, keys_.data() + b * L * A, p.v.data(), A,
                                                 len_[size_t(b)], L, w);
        const int64_t s = int64_t(std::max_element(w, w + L) - w);
        std::memcpy(z, vb + s * D, size_t(D) * sizeof(float));
        break;
      }
      case ImageAttention::None:
        std::fill(w, w + L, 1.0f / float(L));
        std::memcpy(z, mean_.data() + b * D, size_t(D) * sizeof(float));
        break;
    }
    for (int64_t d = 0; d < D; ++d) z[d] *= beta;
  }
}

// 4. gx = [E y; z] W_ih^T [N, 4Hd]
void CaptionerStepDecoder::input_products(const StepCall& c) {
  const CaptionerPrepared& p = *p_;
  const nn::StepRows x = nn::shared_rows(in_x_, p.ih.type(), c.N, X_, x_.data(), X_);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < p.ih.units(); ++u) p.ih.apply(x, u, u + 1, gx_.data(), p.G);
}

// 5. the LSTM cell over blocks of whole rows: h, c [N, Hd] in place
void CaptionerStepDecoder::cell_rows(const StepCall& c) {
  constexpr int64_t kRows = 8;
  const CaptionerPrepared& p = *p_;
  const int64_t N = c.N, G = p.G, Hd = p.Hd;
#pragma omp for schedule(dynamic, 1)
  for (int64_t i0 = 0; i0 < N; i0 += kRows) {
    const int64_t n = std::min(kRows, N - i0);
    float* y[kRows];
    float* cr[kRows];
    for (int64_t j = 0; j < n; ++j) y[j] = c.h + (i0 + j) * Hd, cr[j] = c.c + (i0 + j) * Hd;
    rnn_kernels::LstmForward a;
    a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
    a.gates = gx_.data() + i0 * G, a.gh = gh_.data() + i0 * G;
    a.b_ih = p.b_ih.data(), a.b_hh = p.b_hh.data();
    a.c_prev = c.c + i0 * Hd, a.tanh_c = tanh_c_.data() + i0 * Hd;
    a.y_rows = y, a.next_rows = y, a.c_rows = cr;
    rnn_kernels::lstm_forward(a);
  }
}

// 6. the deep output: f [N, E] (= E y already) += h_t L_h^T + z L_z^T, one loop over their columns
void CaptionerStepDecoder::output_products(const StepCall& c) {
  const CaptionerPrepared& p = *p_;
  const nn::StepRows h = nn::shared_rows(in_h_, p.oh.type(), c.N, p.Hd, c.h, p.Hd);  // h_t now
  const nn::StepRows z = nn::shared_rows(in_z_, p.oz.type(), c.N, p.D, x_.data() + p.E, X_);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < p.oh.units(); ++u) {
    p.oh.apply(h, u, u + 1, feat_.data(), p.E, true);
    p.oz.apply(z, u, u + 1, feat_.data(), p.E, true);
  }
}

const StepTop& CaptionerStepDecoder::step(const std::vector<int64_t>& rows, DecoderState& state,
                                          const std::vector<int>& prev, int64_t k, int64_t t) {
  (void)t;  // the recurrence carries all it needs in h and c
  check(rows, state, prev, k);
  const CaptionerPrepared& p = *p_;
  const int64_t N = int64_t(rows.size());
  reserve(N);
  StepCall c;
  c.N = N, c.rows = rows.data(), c.prev = prev.data(), c.h = state.data("h"), c.c = state.data("c");
  const bool par = num_threads() > 1 && N * macs_per_row_ >= kParallelStepMacs;
  logits_.begin(N, k, par ? num_threads() : 1, out_);
  // one region, phases separated by the omp for barriers (as luong_search.cpp)
#pragma omp parallel if (par)
  {
    start_rows(c);
    state_products(c);
    attend_rows(c);
    input_products(c);
    cell_rows(c);
    output_products(c);
    logits_.tiles(feat_.data(), p.E, omp_get_thread_num());
    logits_.merge(omp_get_thread_num(), omp_get_num_threads(), out_);
  }
  // alpha stays in its buffer; a view of it only when asked
  out_.attention = attention_map_.empty() ? Tensor() : weights_.narrow0(0, N);
  return out_;
}

}  // namespace

std::unique_ptr<StepDecoder> make_show_attend_tell_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                           const EncoderMemory& memory, int64_t max_rows) {
  auto p = std::dynamic_pointer_cast<const CaptionerPrepared>(prepared);
  if (!p)
    throw std::invalid_argument("show_attend_tell decoder: the prepared weights are not a show_attend_tell decoder's");
  return std::make_unique<CaptionerStepDecoder>(std::move(p), memory, max_rows);
}

}  // namespace attn::models
