// The backward of the fused Luong decoder loop (luong_decoder.h): the steps in
// reverse, each in the reverse order of the forward (h̃, attention, the
// layers from the top), then every weight gradient as one GEMM over all T B rows.
#include <omp.h>

#include <cstring>

#include "attn/models/decoder_cell.h"
#include "attn/models/luong_kernels.h"
#include "attn/models/luong_loop.h"
#include "attn/models/model_parts.h"
#include "attn/models/rnnsearch_kernels.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/threading.h"

namespace attn::models::detail {
namespace {

struct Backward {
  const LuongBackwardInputs& bi;
  const LuongDims& d;
  const LuongSaved& sv;
  const LuongLoopWeights& w;
  // the per-step products with transposed weights packed once: x W = x (W^T)^T
  std::vector<nn::StepLinear> ih_t, hh_t;  // ih_t[0]: the h̃ columns of layer 0
  nn::StepLinear wcc_t, wch_t, q_t, wp_t;
  std::vector<Tensor> dgx, dgh, dh, dc;  // dgx / dgh L x [T B, G] (LSTM: dgh unused); dh / dc L x [B, Hd] carries
  Tensor dkeys, dvalues, dpre, dqp, du, dv_part, dvp_part, da, dctx, dy, dx, dfeed, zero_row;

  explicit Backward(const LuongBackwardInputs& in) : bi(in), d(in.d), sv(in.sv), w(in.w) {
    const int64_t T = d.T, B = d.B, Hd = d.Hd, G = d.G, A = d.A;
    const int threads = omp_get_max_threads();
    for (int64_t l = 0; l < d.L; ++l) {
      const RnnWeights& r = w.layers[size_t(l)];
      ih_t.push_back(nn::StepLinear::columns_of(r.weight_ih, l == 0 ? d.E : 0, Hd));
      hh_t.push_back(nn::StepLinear::columns_of(r.weight_hh, 0, Hd));
      dgx.push_back(Tensor::empty({T * B, G}));
      dgh.push_back(w.cell == CellType::Gru ? Tensor::empty({T * B, G}) : Tensor());
      dh.push_back(Tensor::zeros({B, Hd}));
      dc.push_back(w.cell == CellType::Lstm ? Tensor::zeros({B, Hd}) : Tensor());
    }
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
    dctx = Tensor::empty({B, d.Dv}), dy = Tensor::empty({B, Hd}), dx = Tensor::empty({B, Hd});
    dfeed = Tensor::zeros({B, Hd}), zero_row = Tensor::zeros({Hd});
  }

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
    const float* H = sv.H[size_t(d.L - 1)].data() + (t + 1) * B * Hd;
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

  // layer l's step t, given dh_t^l's gradient from above (dy or dx)
  void layer(int64_t t, int64_t l, const float* dabove) {
    const int64_t B = d.B, Hd = d.Hd, G = d.G;
    const bool lstm = w.cell == CellType::Lstm;
    CellBackward cb;
    cb.cell = w.cell, cb.B = B, cb.Hd = Hd;
    cb.gates = sv.gates[size_t(l)].data() + t * B * G;
    if (lstm) {
      cb.c_prev = sv.C[size_t(l)].data() + t * B * Hd, cb.tanh_c = sv.aux[size_t(l)].data() + t * B * Hd;
      cb.dc = dc[size_t(l)].data();
    } else {
      cb.ghn = sv.aux[size_t(l)].data() + t * B * Hd, cb.h_prev = sv.H[size_t(l)].data() + t * B * Hd;
      cb.dgh = dgh[size_t(l)].data() + t * B * G;
    }
    cb.dy = dabove, cb.zero_row = zero_row.data();
    cb.dh = dh[size_t(l)].data(), cb.dgx = dgx[size_t(l)].data() + t * B * G;
    cell_backward(cb);
    // h-side: GRU dh += dgh W_hh; LSTM dh = dgates W_hh
    apply_all(hh_t[size_t(l)], B, lstm ? cb.dgx : cb.dgh, G, dh[size_t(l)].data(), Hd, !lstm);
    if (l > 0) {  // x = h^{l-1}_t * m  =>  d h^{l-1}_t = (dgx W_ih) m
      apply_all(ih_t[size_t(l)], B, cb.dgx, G, dx.data(), Hd, false);
      if (bi.in.layer_masks.defined()) {
        const float* m = bi.in.layer_masks.data() + (t * (d.L - 1) + l - 1) * B * Hd;
        for (int64_t i = 0; i < B * Hd; ++i) dx.data()[i] *= m[i];
      }
    } else if (t > 0) {  // layer 0 reads h̃_{t-1}: its gradient, carried to step t - 1
      apply_all(ih_t[0], B, cb.dgx, G, dfeed.data(), Hd, false);
    }
  }

  void step(int64_t t, const float* dout) {
    combine(t, dout);
    attention(t);
    for (int64_t l = d.L - 1; l >= 0; --l) layer(t, l, l == d.L - 1 ? dy.data() : dx.data());
  }

  // dW = dG^T X over rows [0, n) into the columns [c0, c0 + cols) of dW [M, ld]
  static void weight_grad(Tensor& dW, int64_t c0, const float* dG, int64_t M, const float* X, int64_t cols,
                          int64_t n) {
    const int64_t ld = dW.size(1);
    if (n == 0) {
      for (int64_t i = 0; i < M; ++i) std::memset(dW.data() + i * ld + c0, 0, size_t(cols) * sizeof(float));
      return;
    }
    kernels::gemm(true, false, M, cols, n, 1.0f, dG, M, X, cols, 0.0f, dW.data() + c0, ld);
  }

  std::vector<Tensor> weight_grads(Tensor& demb) {
    const int64_t TB = d.T * d.B, B = d.B, E = d.E, Hd = d.Hd, G = d.G, A = d.A;
    std::vector<Tensor> g;
    for (int64_t l = 0; l < d.L; ++l) {
      const RnnWeights& r = w.layers[size_t(l)];
      const Tensor& gx = dgx[size_t(l)];
      const Tensor& gh = w.cell == CellType::Lstm ? gx : dgh[size_t(l)];
      Tensor dWih = Tensor::empty(r.weight_ih.shape()), dWhh = Tensor::empty(r.weight_hh.shape());
      if (l == 0) {
        weight_grad(dWih, 0, gx.data(), G, bi.in.emb.data(), E, TB);
        weight_grad(dWih, E, gx.data() + B * G, G, sv.out.data(), Hd, TB - B);  // h̃_{t-1} for t >= 1
        kernels::gemm(false, false, TB, E, G, 1.0f, gx.data(), G, r.weight_ih.data(), E + Hd, 0.0f, demb.data(), E);
      } else {
        weight_grad(dWih, 0, gx.data(), G, sv.X[size_t(l)].data(), Hd, TB);
      }
      weight_grad(dWhh, 0, gh.data(), G, sv.H[size_t(l)].data(), Hd, TB);
      g.push_back(dWih);
      g.push_back(dWhh);
      g.push_back(r.bias_ih.defined() ? kernels::sum_axis(gx, 0, false) : Tensor());
      g.push_back(r.bias_hh.defined() ? kernels::sum_axis(gh, 0, false) : Tensor());
    }
    const float* Htop = sv.H[size_t(d.L - 1)].data() + B * Hd;  // h_t, t = 0 .. T-1
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
  for (int64_t t = d.T - 1; t >= 0; --t) bw.step(t, dout.defined() ? dout.data() : nullptr);
  Tensor demb = Tensor::empty(in.in.emb.shape());
  if (d.T == 0) demb = Tensor::zeros(in.in.emb.shape());
  std::vector<Tensor> weights = bw.weight_grads(demb);
  std::vector<Tensor> g = {demb, bw.dkeys, bw.dvalues};
  for (const Tensor& h : bw.dh) g.push_back(h);
  if (in.w.cell == CellType::Lstm)
    for (const Tensor& c : bw.dc) g.push_back(c);
  g.insert(g.end(), weights.begin(), weights.end());
  return g;
}

}  // namespace attn::models::detail
