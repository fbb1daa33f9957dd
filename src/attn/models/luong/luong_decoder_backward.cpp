// The backward of the fused Luong decoder loop (luong_decoder.h): the shared
// loop (decoder_loop.h) runs the steps in reverse, each in the reverse order of
// the forward (h̃, attention, the layers from the top), then every weight
// gradient is one GEMM over all T B rows.
#include <omp.h>


#include "attn/cpu/threading.h"
#include "attn/kernels/luong_rows.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/models/rnn/decoder_cell.h"
#include "attn/models/luong/luong_loop.h"
#include "attn/models/model_parts.h"
#include "attn/tensor/kernels.h"

namespace attn::models::detail {
namespace {

// Luong's wiring of the decoder loop's backward (decoder_loop.h): per step,
// h̃ then the attention give d h_t for the cells; layer 0 gives d h̃_{t-1}.
struct Backward {
  const LuongBackwardInputs& bi;
  const LuongDims& d;
  const LuongSaved& sv;
  const LuongLoopWeights& w;
  // the per-step products with transposed weights packed once: x W = x (W^T)^T
  nn::StepLinear wcc_t, wch_t, q_t, wp_t;
  Tensor dkeys, dvalues, dpre, dqp, du, dv_part, dvp_part, da, dctx, dy, dfeed;

  explicit Backward(const LuongBackwardInputs& in) : bi(in), d(in.d), sv(in.sv), w(in.w) {
    const int64_t T = d.T, B = d.B, Hd = d.Hd, A = d.A;
    const int threads = omp_get_max_threads();
    wcc_t = nn::StepLinear::columns_of(w.combine, 0, d.Dv);
    wch_t = nn::StepLinear::columns_of(w.combine, d.Dv, Hd);
    if (w.score == LuongScore::Concat) {
      q_t = nn::StepLinear::columns_of(w.concat_q, 0, Hd);
      dqp = Tensor::zeros({T * B, A});
      dv_part = Tensor::zeros({threads, A});
    }
    if (w.window == LuongWindow::LocalP) {
      wp_t = nn::StepLinear::columns_of(w.local_wp, 0, Hd);
      du = Tensor::empty({T * B, A});
      dvp_part = Tensor::zeros({threads, A});
    }
    dkeys = Tensor::zeros(bi.in.keys.shape()), dvalues = Tensor::zeros(bi.in.values.shape());
    dpre = Tensor::empty({T * B, Hd});
    da = Tensor::empty({threads, d.S});
    dctx = Tensor::empty({B, d.Dv}), dy = Tensor::empty({B, Hd});
    dfeed = Tensor::zeros({B, Hd});
  }

  const float* dout = nullptr;  // [T, B, Hd] d(loss)/d(h̃), or null
  const float* after_cells_backward(int64_t t) {
    combine(t, dout);
    attention(t);
    return dy.data();
  }
  float* dextra(int64_t t) { return t > 0 ? dfeed.data() : nullptr; }  // d h̃_{t-1}, carried to step t - 1
  void before_cells_backward(int64_t) {}

  // h̃_t = tanh(pre) * f  =>  dpre = (dout_t + the carry from step t + 1) f (1 - tanh^2)
  void combine(int64_t t, const float* dout) {
    const int64_t B = d.B, Hd = d.Hd;
    const float* ht = sv.htilde.data() + t * B * Hd;
    const float* f = bi.in.feed_masks.defined() ? bi.in.feed_masks.data() + t * B * Hd : nullptr;
    const float* g = dout ? dout + t * B * Hd : nullptr;
    float* dp = dpre.data() + t * B * Hd;
    const float* df = dfeed.data();
    for (int64_t i = 0; i < B * Hd; ++i) {
      const float v = (g ? g[i] : 0.0f) + df[i];
      dp[i] = (f ? v * f[i] : v) * (1.0f - ht[i] * ht[i]);
    }
    // pre = W_cc c + W_ch h  =>  dc_t = dpre W_cc, dh_t = dpre W_ch
    apply_all(wcc_t, B, dp, Hd, dctx.data(), d.Dv, false);
    apply_all(wch_t, B, dp, Hd, dy.data(), Hd, false);
  }

  // local-p: p = len sigmoid(e), e = v_p . u, u = tanh(W_p h): dp -> du (row r) and dv_p
  void position_backward(int64_t r, int64_t b, float dp, int tid) {
    const int64_t A = d.A;
    const float len = float(bi.len[size_t(b)]), p = sv.pos.data()[r], s = len > 0 ? p / len : 0.0f;
    const float de = dp * len * s * (1.0f - s);
    const float* u = sv.u.data() + r * A;
    float* dur = du.data() + r * A;
    float* dvp = dvp_part.data() + int64_t(tid) * A;
    for (int64_t k = 0; k < A; ++k) {
      dvp[k] += de * u[k];
      dur[k] = de * w.local_vp.data()[k] * (1.0f - u[k] * u[k]);
    }
  }

  void attention(int64_t t) {
    const int64_t B = d.B, S = d.S, K = d.K, Dv = d.Dv, Hd = d.Hd;
    const float* H = sv.cells->top(t);
    const bool par = B > 1 && B * S * (K + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t b = 0; b < B; ++b) {
      const int tid = omp_get_thread_num();
      const int64_t r = t * B + b;
      if (w.score == LuongScore::Concat) {
        rnnsearch_kernels::AttendBackward ab;
        ab.A = d.A, ab.Dv = Dv, ab.L = bi.len[size_t(b)];
        ab.q = sv.qp.data() + r * d.A, ab.keys = bi.in.keys.data() + b * S * K, ab.v = w.concat_v.data();
        ab.values = bi.in.values.data() + b * S * Dv, ab.w = sv.a.data() + r * S, ab.dc = dctx.data() + b * Dv;
        ab.dkeys = dkeys.data() + b * S * K, ab.dvalues = dvalues.data() + b * S * Dv, ab.dq = dqp.data() + r * d.A;
        ab.dv = dv_part.data() + int64_t(tid) * d.A, ab.da = da.data() + int64_t(tid) * S;
        rnnsearch_kernels::attend_row_backward(ab);
        continue;
      }
      luong_kernels::DotAttendBackward k;
      k.K = K, k.Dv = Dv, k.lo = sv.lo[size_t(r)], k.hi = sv.hi[size_t(r)];
      k.q = H + b * Hd, k.keys = bi.in.keys.data() + b * S * K, k.values = bi.in.values.data() + b * S * Dv;
      k.a = sv.a.data() + r * S;
      k.gauss = w.window == LuongWindow::LocalP;
      k.p = k.gauss ? sv.pos.data()[r] : 0.0f, k.inv_two_sigma2 = luong_inv_two_sigma2(w.half_width);
      k.dc = dctx.data() + b * Dv, k.dq = dy.data() + b * Hd;  // q = h_t
      k.dkeys = dkeys.data() + b * S * K, k.dvalues = dvalues.data() + b * S * Dv, k.da = da.data() + int64_t(tid) * S;
      luong_kernels::dot_attend_backward(k);
      if (k.gauss) position_backward(r, b, k.dp, tid);
    }
    // the query side's products: dh_t += dqp W_q (concat), du W_p (local-p)
    if (w.score == LuongScore::Concat) apply_all(q_t, B, dqp.data() + t * B * d.A, d.A, dy.data(), Hd, true);
    if (w.window == LuongWindow::LocalP) apply_all(wp_t, B, du.data() + t * B * d.A, d.A, dy.data(), Hd, true);
  }

  // the attention's and W_c's weight gradients, after the loop
  std::vector<Tensor> weight_grads() {
    const int64_t TB = d.T * d.B, Hd = d.Hd, A = d.A;
    std::vector<Tensor> g;
    const float* Htop = sv.cells->top(0);  // h_t, t = 0 .. T-1 (consecutive rows)
    Tensor dWq, dv, dWp, dvp, dWc = Tensor::empty(w.combine.shape());
    if (w.score == LuongScore::Concat) {
      dWq = Tensor::empty({A, Hd});
      weight_grad(dWq, 0, dqp.data(), A, Htop, Hd, TB);
      dv = kernels::sum_axis(dv_part, 0, false);
    }
    if (w.window == LuongWindow::LocalP) {
      dWp = Tensor::empty({A, Hd});
      weight_grad(dWp, 0, du.data(), A, Htop, Hd, TB);
      dvp = kernels::sum_axis(dvp_part, 0, false);
    }
    weight_grad(dWc, 0, dpre.data(), Hd, sv.ctx.data(), d.Dv, TB);
    weight_grad(dWc, d.Dv, dpre.data(), Hd, Htop, Hd, TB);
    for (const Tensor& t : {dWq, dv, dWp, dvp, dWc}) g.push_back(t);
    return g;
  }
};

}  // namespace

std::vector<Tensor> luong_decoder_backward(const LuongBackwardInputs& in, const Tensor& dout) {
  const LuongDims& d = in.d;
  Backward bw(in);
  bw.dout = dout.defined() ? dout.data() : nullptr;
  CellStack& cells = *in.sv.cells;
  run_decoder_backward(cells, bw, d.T);
  Tensor demb = Tensor::empty(in.in.emb.shape());
  // layer 0's extra input h̃_{t-1} for t >= 1: the output's first T - 1 blocks
  std::vector<Tensor> layers = cells.weight_grads(in.in.emb, in.sv.out.data(), 1, demb);
  std::vector<Tensor> g = {demb, bw.dkeys, bw.dvalues};
  for (const Tensor& h : cells.dh0()) g.push_back(h);
  for (const Tensor& c : cells.dc0()) g.push_back(c);
  g.insert(g.end(), layers.begin(), layers.end());
  std::vector<Tensor> rest = bw.weight_grads();
  g.insert(g.end(), rest.begin(), rest.end());
  cells.end_backward();
  return g;
}

}  // namespace attn::models::detail
