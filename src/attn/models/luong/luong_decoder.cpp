// The fused Luong decoder loop: shape checks and the forward (see the header);
// the backward is luong_decoder_backward.cpp. The loop and its cells are
// decoder_loop.h's (shared with rnnsearch's loop), the attention rows
// kernels/luong_rows.h's (dot, general) and kernels/rnnsearch_rows.h's additive rows (concat).
#include "attn/models/luong/luong_decoder.h"

#include <omp.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "attn/attention/attention.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/luong_rows.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/models/rnn/decoder_cell.h"
#include "attn/models/luong/luong_loop.h"
#include "attn/models/model_parts.h"
#include "attn/tensor/kernels.h"

namespace attn::models {
namespace {

using detail::LuongDims;
using detail::LuongSaved;

using detail::fits;
bool fits_or_absent(const Tensor& t, const Shape& s) { return !t.defined() || t.shape() == s; }

// The loop's sizes from the inputs and weights; throws naming every shape that does not fit.
LuongDims check_shapes(const LuongLoopInputs& in, const LuongLoopWeights& w) {
  const bool base = in.emb.defined() && in.emb.dim() == 3 && in.keys.defined() && in.keys.dim() == 3 &&
                    in.values.defined() && in.values.dim() == 3 && w.combine.defined() && w.combine.dim() == 2 &&
                    !w.layers.empty() && w.layers[0].weight_hh.defined() && w.layers[0].weight_hh.dim() == 2;
  if (!base)
    throw std::invalid_argument("luong_decoder: emb " + shape_str(in.emb) + ", keys " + shape_str(in.keys) +
                                ", values " + shape_str(in.values) + ", W_c " + shape_str(w.combine) +
                                " (expects emb [T, B, E], keys [B, S, K], values [B, S, Dv], W_c [Hd, Dv + Hd] "
                                "and at least one layer)");
  LuongDims d{};
  d.T = in.emb.size(0), d.B = in.emb.size(1), d.E = in.emb.size(2), d.S = in.keys.size(1), d.K = in.keys.size(2);
  d.Dv = in.values.size(2), d.Hd = w.layers[0].weight_hh.size(1), d.G = detail::gate_count(w.cell) * d.Hd;
  d.L = int64_t(w.layers.size());
  d.A = w.score == LuongScore::Concat ? (w.concat_q.defined() ? w.concat_q.size(0) : -1)
                                      : (w.local_wp.defined() ? w.local_wp.size(0) : 0);
  const bool lstm = w.cell == CellType::Lstm;
  bool ok = in.keys.size(0) == d.B && fits(in.values, {d.B, d.S, d.Dv}) && fits(in.lengths, {d.B}) &&
            int64_t(in.h0.size()) == d.L && int64_t(in.c0.size()) == (lstm ? d.L : 0) &&
            fits(w.combine, {d.Hd, d.Dv + d.Hd}) && fits_or_absent(in.feed_masks, {d.T, d.B, d.Hd}) &&
            (d.L == 1 || fits_or_absent(in.layer_masks, {d.T, d.L - 1, d.B, d.Hd}));
  for (int64_t l = 0; ok && l < d.L; ++l) {
    const RnnWeights& r = w.layers[size_t(l)];
    ok = fits(in.h0[size_t(l)], {d.B, d.Hd}) && (!lstm || fits(in.c0[size_t(l)], {d.B, d.Hd})) &&
         fits(r.weight_ih, {d.G, l == 0 ? d.E + d.Hd : d.Hd}) && fits(r.weight_hh, {d.G, d.Hd}) &&
         fits_or_absent(r.bias_ih, {d.G}) && fits_or_absent(r.bias_hh, {d.G});
  }
  if (ok && w.score == LuongScore::Concat)
    ok = d.A > 0 && fits(w.concat_q, {d.A, d.Hd}) && fits(w.concat_v, {d.A}) && d.K == d.A &&
         w.window == LuongWindow::Global;
  if (ok && w.score != LuongScore::Concat) ok = d.K == d.Hd;
  if (ok && w.window == LuongWindow::LocalP) ok = d.A > 0 && fits(w.local_wp, {d.A, d.Hd}) && fits(w.local_vp, {d.A});
  if (!ok)
    throw std::invalid_argument(
        "luong_decoder: emb " + shape_str(in.emb) + ", keys " + shape_str(in.keys) + ", values " +
        shape_str(in.values) + ", lengths " + shape_str(in.lengths) + ", " + std::to_string(in.h0.size()) + " h0 and " +
        std::to_string(in.c0.size()) + " c0 for " + std::to_string(d.L) + " layers of W_hh " +
        shape_str(w.layers[0].weight_hh) + ", layer 0 W_ih " + shape_str(w.layers[0].weight_ih) + ", W_c " +
        shape_str(w.combine) + ", W_q " + shape_str(w.concat_q) + ", W_p " + shape_str(w.local_wp) +
        " (expects lengths [B], h0 / c0 [B, Hd] per layer, W_ih [G, E + Hd] then [G, Hd], W_hh [G, Hd], keys of "
        "size Hd (dot, general) or A (concat, global only), W_q / W_p [A, Hd], masks [T, L - 1, B, Hd] / [T, B, Hd])");
  return d;
}

// Luong's wiring of the decoder loop's forward (decoder_loop.h): after the
// cells, attention on h_t and h̃_t; layer 0's extra input is h̃_{t-1}.
struct Forward {
  const LuongDims d;
  const LuongLoopInputs& in;
  const LuongLoopWeights& w;
  const std::vector<int64_t>& len;
  LuongSaved& sv;
  nn::StepLinear q_lin, wp_lin, wcc, wch;
  Tensor w_cc, w_ch, scratch;  // scratch [threads, S]: local-p's weights a g of a row

  Forward(const LuongDims& dims, const LuongLoopInputs& i, const LuongLoopWeights& ww,
          const std::vector<int64_t>& lens, LuongSaved& s)
      : d(dims), in(i), w(ww), len(lens), sv(s), scratch(Tensor::empty({int64_t(omp_get_max_threads()), dims.S})) {
    if (w.score == LuongScore::Concat) q_lin = nn::StepLinear(w.concat_q, true);
    if (w.window == LuongWindow::LocalP) wp_lin = nn::StepLinear(w.local_wp, true);
    w_cc = detail::columns(w.combine, 0, d.Dv), w_ch = detail::columns(w.combine, d.Dv, d.Hd);
    wcc = nn::StepLinear(w_cc, true), wch = nn::StepLinear(w_ch, true);
  }

  void before_cells(int64_t) {}
  const float* extra(int64_t t) const { return t > 0 ? sv.out.data() + (t - 1) * d.B * d.Hd : nullptr; }
  void after_cells(int64_t t) {
    const float* h = sv.cells->top(t);
    attend(t, h);
    combine(t, h);
  }

  // local-p's p_t = length sigmoid(v_p^T tanh(W_p h_t)) of step t's rows
  void positions(int64_t t, const float* h) {
    const int64_t B = d.B, A = d.A;
    float* u = sv.u.data() + t * B * A;
    detail::apply_all(wp_lin, B, h, d.Hd, u, A, false);
    rnnsearch_kernels::tanh_columns(u, A, B, 0, A);
    for (int64_t b = 0; b < B; ++b) {
      float e = 0.0f;
      for (int64_t k = 0; k < A; ++k) e += u[b * A + k] * w.local_vp.data()[k];
      sv.pos.data()[t * B + b] = float(len[size_t(b)]) / (1.0f + std::exp(-e));
    }
  }

  // a_t, c_t of step t's rows from h_t (their visible ranges into sv.lo / hi)
  void attend(int64_t t, const float* h) {
    const int64_t B = d.B, S = d.S, K = d.K, Dv = d.Dv, Hd = d.Hd;
    if (w.window == LuongWindow::LocalP) positions(t, h);
    if (w.score == LuongScore::Concat) detail::apply_all(q_lin, B, h, Hd, sv.qp.data() + t * B * d.A, d.A, false);
    const bool par = B > 1 && B * S * (K + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t r = t * B + b, L = len[size_t(b)];
      float *a = sv.a.data() + r * S, *c = sv.ctx.data() + r * Dv;
      const float *keys = in.keys.data() + b * S * K, *values = in.values.data() + b * S * Dv;
      if (w.score == LuongScore::Concat) {
        rnnsearch_kernels::attend_row(sv.qp.data() + r * d.A, keys, w.concat_v.data(), d.A, values, Dv, L, S, a, c);
        sv.lo[size_t(r)] = 0, sv.hi[size_t(r)] = L;
        continue;
      }
      std::pair<int64_t, int64_t> range{0, L};
      if (w.window == LuongWindow::LocalM) range = attention::window_range(double(t), w.half_width, L);
      if (w.window == LuongWindow::LocalP) range = attention::window_range(double(sv.pos.data()[r]), w.half_width, L);
      sv.lo[size_t(r)] = range.first, sv.hi[size_t(r)] = range.second;
      luong_kernels::DotAttend k;
      k.K = K, k.Dv = Dv, k.S = S, k.lo = range.first, k.hi = range.second;
      k.q = h + b * Hd, k.keys = keys, k.values = values;
      k.gauss = w.window == LuongWindow::LocalP;
      k.p = k.gauss ? sv.pos.data()[r] : 0.0f, k.inv_two_sigma2 = detail::luong_inv_two_sigma2(w.half_width);
      k.a = a, k.w = k.gauss ? scratch.data() + omp_get_thread_num() * S : a, k.c = c;
      luong_kernels::dot_attend(k);
    }
  }

  // h̃_t = tanh(W_c [c_t; h_t]) * f_t
  void combine(int64_t t, const float* h) {
    const int64_t B = d.B, Hd = d.Hd;
    float* ht = sv.htilde.data() + t * B * Hd;
    detail::apply_all(wcc, B, sv.ctx.data() + t * B * d.Dv, d.Dv, ht, Hd, false);
    detail::apply_all(wch, B, h, Hd, ht, Hd, true);
    rnnsearch_kernels::tanh_columns(ht, Hd, B, 0, Hd);
    float* o = sv.out.data() + t * B * Hd;
    const float* f = in.feed_masks.defined() ? in.feed_masks.data() + t * B * Hd : nullptr;
    for (int64_t i = 0; i < B * Hd; ++i) o[i] = f ? ht[i] * f[i] : ht[i];
  }
};

LuongSaved allocate(const LuongDims& d, CellType cell, LuongScore score, LuongWindow window) {
  const int64_t T = d.T, B = d.B, Hd = d.Hd;
  LuongSaved sv;
  sv.htilde = Tensor::empty({T * B, Hd});
  sv.out = Tensor::empty({T, B, Hd});
  sv.a = Tensor::empty({T * B, d.S});
  sv.ctx = Tensor::empty({T * B, d.Dv});
  if (score == LuongScore::Concat) sv.qp = Tensor::empty({T * B, d.A});
  if (window == LuongWindow::LocalP) {
    sv.u = Tensor::empty({T * B, d.A});
    sv.pos = Tensor::empty({T * B});
  }
  sv.lo.assign(size_t(T * B), 0);
  sv.hi.assign(size_t(T * B), 0);
  return sv;
}

LuongLoopInputs detached(const LuongLoopInputs& in) {
  LuongLoopInputs o;
  o.emb = in.emb.detach(), o.keys = in.keys.detach(), o.values = in.values.detach(), o.lengths = in.lengths;
  o.layer_masks = in.layer_masks, o.feed_masks = in.feed_masks;
  return o;  // h0 / c0: the backward reads the saved H and C
}

LuongLoopWeights detached(const LuongLoopWeights& w) {
  LuongLoopWeights o = w;
  for (RnnWeights& r : o.layers) {
    r.weight_ih = r.weight_ih.detach(), r.weight_hh = r.weight_hh.detach();
    if (r.bias_ih.defined()) r.bias_ih = r.bias_ih.detach();
    if (r.bias_hh.defined()) r.bias_hh = r.bias_hh.detach();
  }
  for (Tensor* t : {&o.concat_q, &o.concat_v, &o.local_wp, &o.local_vp, &o.combine})
    if (t->defined()) *t = t->detach();
  return o;
}

}  // namespace

Tensor luong_decoder(const LuongLoopInputs& in, const LuongLoopWeights& w) {
  const LuongDims d = check_shapes(in, w);
  std::vector<int64_t> len = lengths_in_range("luong_decoder", "lengths", in.lengths, d.S);
  LuongSaved sv = allocate(d, w.cell, w.score, w.window);
  const LuongLoopWeights wd = detached(w);
  sv.cells = std::make_unique<detail::CellStack>(w.cell, wd.layers, d.T, d.B, d.E, d.Hd, in.layer_masks);
  sv.cells->begin(in.emb, in.h0, in.c0);
  Forward wiring(d, in, w, len, sv);
  detail::run_decoder_forward(*sv.cells, wiring, d.T);
  Tensor out = sv.out;
  sv.out = out.detach();  // the backward's copy must not hold the node that holds it
  std::vector<Tensor> inputs = {in.emb, in.keys, in.values};
  for (const Tensor& h : in.h0) inputs.push_back(h);
  for (const Tensor& c : in.c0) inputs.push_back(c);
  for (const RnnWeights& r : w.layers)
    for (const Tensor& t : {r.weight_ih, r.weight_hh, r.bias_ih, r.bias_hh}) inputs.push_back(t);
  for (const Tensor& t : {w.concat_q, w.concat_v, w.local_wp, w.local_vp, w.combine}) inputs.push_back(t);
  auto saved = std::make_shared<detail::LuongBackwardInputs>(
      detail::LuongBackwardInputs{d, std::move(len), detached(in), wd, std::move(sv)});
  autograd::record("luong_decoder", inputs, out, [saved](const std::vector<Tensor>& douts) -> std::vector<Tensor> {
    return detail::luong_decoder_backward(*saved, douts[0]);
  });
  return out;
}

}  // namespace attn::models
