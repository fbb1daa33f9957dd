// The fused RNNsearch decoder loop: forward and backward (see the header). The
// per-row attention loops are rnnsearch_kernels.cpp, compiled per instruction set.
#include "attn/models/rnnsearch_decoder.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/models/decoder_cell.h"
#include "attn/models/model_parts.h"
#include "attn/models/rnnsearch_kernels.h"
#include "attn/nn/step_linear.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/threading.h"

namespace attn::models {
namespace {

struct Dims {
  int64_t T, B, E, S, A, Dv, Hd, G, In;
};

// Checks the shapes and returns the loop's sizes; throws naming every shape.
Dims check_shapes(const Tensor& emb, const Tensor& keys, const Tensor& values, const Tensor& lengths, const Tensor& s0,
                  const DecoderLoopWeights& w) {
  bool ok = emb.defined() && keys.defined() && values.defined() && lengths.defined() && s0.defined() &&
            w.W1.defined() && w.v.defined() && w.w_ih.defined() && w.w_hh.defined() && emb.dim() == 3 &&
            keys.dim() == 3 && values.dim() == 3 && lengths.dim() == 1 && s0.dim() == 2 && w.W1.dim() == 2 &&
            w.v.dim() == 1 && w.w_ih.dim() == 2 && w.w_hh.dim() == 2;
  Dims d{};
  if (ok) {
    d = {emb.size(0), emb.size(1), emb.size(2), keys.size(1), keys.size(2), values.size(2), s0.size(1),
         3 * s0.size(1), emb.size(2) + values.size(2)};
    ok = keys.size(0) == d.B && values.size(0) == d.B && values.size(1) == d.S && lengths.size(0) == d.B &&
         s0.size(0) == d.B && w.W1.size(0) == d.A && w.W1.size(1) == d.Hd && w.v.size(0) == d.A &&
         w.w_ih.size(0) == d.G && w.w_ih.size(1) == d.In && w.w_hh.size(0) == d.G && w.w_hh.size(1) == d.Hd &&
         (!w.b_ih.defined() || w.b_ih.numel() == d.G) && (!w.b_hh.defined() || w.b_hh.numel() == d.G);
  }
  if (!ok)
    throw std::invalid_argument("rnnsearch_decoder: emb " + shape_str(emb) + ", keys " + shape_str(keys) + ", values " +
                                shape_str(values) + ", lengths " + shape_str(lengths) + ", s0 " + shape_str(s0) +
                                ", W1 " + shape_str(w.W1) + ", v " + shape_str(w.v) + ", w_ih " + shape_str(w.w_ih) +
                                ", w_hh " + shape_str(w.w_hh) +
                                " (expects emb [T, B, E], keys [B, S, A], values [B, S, Dv], lengths [B], s0 [B, Hd], "
                                "W1 [A, Hd], v [A], w_ih [3Hd, E + Dv], w_hh [3Hd, Hd])");
  return d;
}

// What the forward pass saves for the backward, per step t at rows [t * B, t * B + B).
struct Saved {
  Tensor gates;  // [T * B, G]  x W_ih^T, then the activated r, z, n
  Tensor ghn;    // [T * B, Hd] W_hn s + b_hn
  Tensor qp;     // [T * B, A]  W1 s_{t-1}
  Tensor wts;    // [T * B, S]  attention weights
  Tensor sprev;  // [T * B, Hd] s_{t-1}
};

// The forward loop over T steps; fills out.states, out.contexts and `saved`.
void forward_loop(const Dims& d, const Tensor& emb, const Tensor& keys, const Tensor& values,
                  const std::vector<int64_t>& len, const Tensor& s0, const DecoderLoopWeights& w, DecoderLoopOutput& out,
                  Saved& sv) {
  const int64_t T = d.T, B = d.B, E = d.E, S = d.S, A = d.A, Dv = d.Dv, Hd = d.Hd, G = d.G, In = d.In;
  Tensor b_ih = or_zeros(w.b_ih, {G}), b_hh = or_zeros(w.b_hh, {G});
  Tensor gh = Tensor::empty({B, G});  // s W_hh^T of one step
  std::memcpy(sv.sprev.data(), s0.data(), size_t(B * Hd) * sizeof(float));
  // the embedding half of every step's input projection at once: [T * B, E] x [E, 3Hd]
  kernels::gemm(false, true, T * B, G, E, 1.0f, emb.data(), E, w.w_ih.data(), In, 0.0f, sv.gates.data(), G);

  // The per-step products reuse weights packed once per batch (nn/step_linear.h):
  // a BLAS call would re-pack the whole weight at every step (~25% of a step).
  const nn::StepLinear q_lin(w.W1, true), hh_lin(w.w_hh, true), ic_lin(detail::columns(w.w_ih, E, Dv), true);
  const int64_t uq = q_lin.units(), uh = hh_lin.units();
  const bool par_hq = B > 1 && B * (A + G) * Hd > kParallelGrain * 32;
  const float *pk = keys.data(), *pval = values.data(), *pv = w.v.data();
  const bool par_att = B > 1 && B * S * (A + Dv) > kParallelGrain;
  for (int64_t t = 0; t < T; ++t) {
    const float* sp = sv.sprev.data() + t * B * Hd;
    float* q = sv.qp.data() + t * B * A;
    float* wt = sv.wts.data() + t * B * S;
    float* ctx = out.contexts.data() + t * B * Dv;
    float* g = sv.gates.data() + t * B * G;
    // qp = s_{t-1} W1^T and gh = s_{t-1} W_hh^T: one parallel loop over both products' units
#pragma omp parallel for schedule(static) if (par_hq)
    for (int64_t u = 0; u < uq + uh; ++u) {
      if (u < uq)
        q_lin.apply(B, sp, Hd, u, u + 1, q, A);
      else
        hh_lin.apply(B, sp, Hd, u - uq, u - uq + 1, gh.data(), G);
    }
#pragma omp parallel for schedule(static) if (par_att)
    for (int64_t b = 0; b < B; ++b) {
      // e_j = v^T tanh(W1 s + kp_j); a = softmax over j < L; c = sum_j a_j h_j
      const bool more = b + 1 < B;  // the next sentence's keys are fetched during this one's context sum
      rnnsearch_kernels::attend_row(q + b * A, pk + b * S * A, pv, A, pval + b * S * Dv, Dv, len[size_t(b)], S,
                                    wt + b * S, ctx + b * Dv, more ? pk + (b + 1) * S * A : nullptr,
                                    more ? len[size_t(b + 1)] * A : 0);
    }
    // gates += c_t W_ic^T (the context half of the input projection)
    detail::apply_all(ic_lin, B, ctx, Dv, g, G, true);
    float* st = out.states.data() + t * B * Hd;
    float* nx = t + 1 < T ? sv.sprev.data() + (t + 1) * B * Hd : st;
    detail::CellForward f;
    f.cell = CellType::Gru, f.B = B, f.Hd = Hd;
    f.gates = g, f.gh = gh.data(), f.b_ih = b_ih.data(), f.b_hh = b_hh.data();
    f.h_prev = sp, f.ghn = sv.ghn.data() + t * B * Hd, f.h = st, f.h_copy = nx;
    detail::cell_forward(f);
  }
}

// What the backward reads besides `saved`: the inputs and weights, detached.
struct BackwardInputs {
  Dims d;
  std::vector<int64_t> len;
  Tensor emb, keys, values, W1, v, w_ih, w_hh, contexts;
  bool has_bih, has_bhh;
  Saved sv;
};

// The gradients of one step's B rows, in the order of the forward reversed:
// GRU gates, then the context's input projection, then the attention, then
// the query projection. Accumulates into dh (d s_{t-1}), dkeys, dvalues; writes
// step t's rows of dgx, dgh, dqp.
struct BackwardStep {
  const BackwardInputs& in;
  const nn::StepLinear &hh_t, &ic_t, &q_t;
  Tensor dh, dgx, dgh, dkeys, dvalues, dqp, dv_part, da, dc, zero_row;

  void gru(int64_t t, const float* dS) {
    const Dims& d = in.d;
    const int64_t B = d.B, Hd = d.Hd, G = d.G;
    // s_t = GRU(x_t, s_{t-1}): gate gradients; dh <- (dh + dS_t) z
    detail::CellBackward cb;
    cb.cell = CellType::Gru, cb.B = B, cb.Hd = Hd;
    cb.gates = in.sv.gates.data() + t * B * G, cb.ghn = in.sv.ghn.data() + t * B * Hd;
    cb.h_prev = in.sv.sprev.data() + t * B * Hd;
    cb.dy = dS ? dS + t * B * Hd : nullptr, cb.zero_row = zero_row.data();
    cb.dh = dh.data(), cb.dgx = dgx.data() + t * B * G, cb.dgh = dgh.data() + t * B * G;
    detail::cell_backward(cb);
  }

  void attention(int64_t t) {
    const Dims& d = in.d;
    const int64_t B = d.B, S = d.S, A = d.A, Dv = d.Dv;
    const float* q = in.sv.qp.data() + t * B * A;
    const float* wt = in.sv.wts.data() + t * B * S;
    float* dq = dqp.data() + t * B * A;
    const float *pk = in.keys.data(), *pval = in.values.data(), *pv = in.v.data();
    float *pdk = dkeys.data(), *pdval = dvalues.data();
    const bool par_att = B > 1 && B * S * (A + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par_att)
    for (int64_t b = 0; b < B; ++b) {
      const int tid = omp_get_thread_num();
      // c = sum_j a_j h_j and a = softmax(e), e_j = v^T tanh(qp + kp_j): d keys, values, qp, v
      rnnsearch_kernels::AttendBackward ab;
      ab.A = A, ab.Dv = Dv, ab.L = in.len[size_t(b)];
      ab.q = q + b * A, ab.keys = pk + b * S * A, ab.v = pv, ab.values = pval + b * S * Dv, ab.w = wt + b * S;
      ab.dc = dc.data() + b * Dv;
      ab.dkeys = pdk + b * S * A, ab.dvalues = pdval + b * S * Dv, ab.dq = dq + b * A;
      ab.dv = dv_part.data() + int64_t(tid) * A, ab.da = da.data() + int64_t(tid) * S;
      rnnsearch_kernels::attend_row_backward(ab);
    }
  }

  void run(int64_t t, const float* dS, const Tensor& dC) {
    const Dims& d = in.d;
    const int64_t B = d.B, A = d.A, Dv = d.Dv, Hd = d.Hd, G = d.G;
    gru(t, dS);
    // gh = s W_hh^T  =>  ds_{t-1} += dgh W_hh
    detail::apply_all(hh_t, B, dgh.data() + t * B * G, G, dh.data(), Hd, true);
    // x_t = [emb_t; c_t], gates_x = x_t W_ih^T  =>  dc_t = dgx W_ic (+ the output's own gradient)
    detail::apply_all(ic_t, B, dgx.data() + t * B * G, G, dc.data(), Dv, false);
    if (dC.defined()) kernels::add_inplace(dc, dC.narrow0(t, 1).view({B, Dv}));
    attention(t);
    // qp = s_{t-1} W1^T  =>  ds_{t-1} += dqp W1
    detail::apply_all(q_t, B, dqp.data() + t * B * A, A, dh.data(), Hd, true);
  }
};

std::vector<Tensor> backward(const BackwardInputs& in, const std::vector<Tensor>& douts) {
  const Dims& d = in.d;
  const int64_t T = d.T, B = d.B, E = d.E, S = d.S, A = d.A, Dv = d.Dv, Hd = d.Hd, G = d.G, In = d.In;
  // per-step products with weights packed once (as in the forward): x W = x (W^T)^T
  const nn::StepLinear hh_t = nn::StepLinear::columns_of(in.w_hh, 0, Hd),
                      ic_t = nn::StepLinear::columns_of(in.w_ih, E, Dv), q_t = nn::StepLinear::columns_of(in.W1, 0, Hd);
  const int threads = omp_get_max_threads();
  BackwardStep step{in,
                    hh_t,
                    ic_t,
                    q_t,
                    Tensor::zeros({B, Hd}),  // dh: d s_t carried backwards
                    Tensor::empty({T * B, G}),
                    Tensor::empty({T * B, G}),
                    Tensor::zeros(in.keys.shape()),
                    Tensor::zeros(in.values.shape()),
                    Tensor::zeros({T * B, A}),
                    Tensor::zeros({int64_t(threads), A}),
                    Tensor::empty({int64_t(threads), S}),
                    Tensor::empty({B, Dv}),
                    Tensor::zeros({Hd})};
  const float* dS = douts[0].defined() ? douts[0].data() : nullptr;  // [T, B, Hd]
  for (int64_t t = T - 1; t >= 0; --t) step.run(t, dS, douts[1]);
  // weight gradients: one GEMM each over all T * B rows
  const Saved& sv = in.sv;
  Tensor dW1 = Tensor::empty(in.W1.shape()), dWih = Tensor::empty(in.w_ih.shape()), dWhh = Tensor::empty(in.w_hh.shape());
  kernels::gemm(true, false, A, Hd, T * B, 1.0f, step.dqp.data(), A, sv.sprev.data(), Hd, 0.0f, dW1.data(), Hd);
  kernels::gemm(true, false, G, E, T * B, 1.0f, step.dgx.data(), G, in.emb.data(), E, 0.0f, dWih.data(), In);
  kernels::gemm(true, false, G, Dv, T * B, 1.0f, step.dgx.data(), G, in.contexts.data(), Dv, 0.0f, dWih.data() + E, In);
  kernels::gemm(true, false, G, Hd, T * B, 1.0f, step.dgh.data(), G, sv.sprev.data(), Hd, 0.0f, dWhh.data(), Hd);
  Tensor demb = Tensor::empty(in.emb.shape());
  kernels::gemm(false, false, T * B, E, G, 1.0f, step.dgx.data(), G, in.w_ih.data(), In, 0.0f, demb.data(), E);
  Tensor dv = kernels::sum_axis(step.dv_part, 0, false);
  Tensor db_ih = in.has_bih ? kernels::sum_axis(step.dgx, 0, false) : Tensor();
  Tensor db_hh = in.has_bhh ? kernels::sum_axis(step.dgh, 0, false) : Tensor();
  return {demb, step.dkeys, step.dvalues, step.dh, dW1, dv, dWih, dWhh, db_ih, db_hh};
}

}  // namespace

DecoderLoopOutput rnnsearch_decoder(const Tensor& emb, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                    const Tensor& s0, const DecoderLoopWeights& w) {
  const Dims d = check_shapes(emb, keys, values, lengths, s0, w);
  const int64_t T = d.T, B = d.B, S = d.S, A = d.A, Dv = d.Dv, Hd = d.Hd, G = d.G;
  std::vector<int64_t> len = lengths_in_range("rnnsearch_decoder", "lengths", lengths, S);
  DecoderLoopOutput out;
  out.states = Tensor::empty({T, B, Hd});
  out.contexts = Tensor::empty({T, B, Dv});
  Saved sv{Tensor::empty({T * B, G}), Tensor::empty({T * B, Hd}), Tensor::empty({T * B, A}), Tensor::empty({T * B, S}),
           Tensor::empty({T * B, Hd})};
  forward_loop(d, emb, keys, values, len, s0, w, out, sv);
  auto in = std::make_shared<BackwardInputs>(BackwardInputs{
      d, std::move(len), emb.detach(), keys.detach(), values.detach(), w.W1.detach(), w.v.detach(), w.w_ih.detach(),
      w.w_hh.detach(), out.contexts.detach(), w.b_ih.defined(), w.b_hh.defined(), sv});
  autograd::record("rnnsearch_decoder", {emb, keys, values, s0, w.W1, w.v, w.w_ih, w.w_hh, w.b_ih, w.b_hh},
                   {&out.states, &out.contexts},
                   [in](const std::vector<Tensor>& douts) -> std::vector<Tensor> { return backward(*in, douts); });
  return out;
}

}  // namespace attn::models
