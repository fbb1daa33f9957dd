// The fused RNNsearch decoder loop: forward and backward (see the header), as
// RNNsearch's wiring of the shared decoder loop (decoder_loop.h). The per-row
// attention loops are kernels/rnnsearch_rows.cpp, compiled per instruction set.
#include "attn/models/rnnsearch/rnnsearch_decoder.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/cpu/threading.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/models/rnn/decoder_cell.h"
#include "attn/models/rnn/decoder_loop.h"
#include "attn/models/model_parts.h"
#include "attn/nn/step_linear.h"
#include "attn/tensor/kernels.h"

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

// What the forward saves for the backward besides the cells', per step t at rows [t * B, t * B + B).
struct Saved {
  std::unique_ptr<detail::CellStack> cells;  // the GRU's states and gates (decoder_loop.h)
  Tensor qp;   // [T * B, A]  W1 s_{t-1}
  Tensor wts;  // [T * B, S]  attention weights
};

// RNNsearch's wiring of the decoder loop's forward (decoder_loop.h): before
// the cell, attention on s_{t-1}; the context c_t is the cell's extra input.
struct Forward {
  const Dims& d;
  const Tensor &keys, &values, &v;
  const std::vector<int64_t>& len;
  DecoderLoopOutput& out;
  Saved& sv;
  // W1 s_{t-1} reads W1 packed once per batch (nn/step_linear.h): a BLAS call
  // would re-pack the whole weight at every step (~25% of a step)
  const nn::StepLinear q_lin;

  void before_cells(int64_t t) {
    const int64_t B = d.B, S = d.S, A = d.A, Dv = d.Dv, Hd = d.Hd;
    float* q = sv.qp.data() + t * B * A;
    float* wt = sv.wts.data() + t * B * S;
    float* ctx = out.contexts.data() + t * B * Dv;
    detail::apply_all(q_lin, B, sv.cells->top(t - 1), Hd, q, A, false);
    const float *pk = keys.data(), *pval = values.data(), *pv = v.data();
    const bool par_att = B > 1 && B * S * (A + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par_att)
    for (int64_t b = 0; b < B; ++b) {
      // e_j = v^T tanh(W1 s + kp_j); a = softmax over j < L; c = sum_j a_j h_j
      const bool more = b + 1 < B;  // the next sentence's keys are fetched during this one's context sum
      rnnsearch_kernels::attend_row(q + b * A, pk + b * S * A, pv, A, pval + b * S * Dv, Dv, len[size_t(b)], S,
                                    wt + b * S, ctx + b * Dv, more ? pk + (b + 1) * S * A : nullptr,
                                    more ? len[size_t(b + 1)] * A : 0);
    }
  }
  const float* extra(int64_t t) const { return out.contexts.data() + t * d.B * d.Dv; }
  void after_cells(int64_t) {}
};

// What the backward reads besides `saved`: the inputs and weights, detached.
struct BackwardInputs {
  Dims d;
  std::vector<int64_t> len;
  Tensor emb, keys, values, W1, v, contexts;
  Saved sv;
};

// RNNsearch's wiring of the decoder loop's backward: the cell's extra input
// gives dc_t (plus the output's own gradient), the attention then d keys,
// values, W1 s_{t-1}, and the query product adds d s_{t-1} to the cell's carry.
struct Backward {
  const BackwardInputs& in;
  const nn::StepLinear q_t;
  const float* dS;  // [T, B, Hd] d(loss)/d(states), or null
  Tensor dC;        // [T, B, Dv] d(loss)/d(contexts), or undefined
  Tensor dkeys, dvalues, dqp, dv_part, da, dc;

  const float* after_cells_backward(int64_t t) const { return dS ? dS + t * in.d.B * in.d.Hd : nullptr; }
  float* dextra(int64_t) { return dc.data(); }

  void before_cells_backward(int64_t t) {
    const Dims& d = in.d;
    const int64_t B = d.B, S = d.S, A = d.A, Dv = d.Dv;
    if (dC.defined()) kernels::add_inplace(dc, dC.narrow0(t, 1).view({B, Dv}));
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
    // qp = s_{t-1} W1^T  =>  ds_{t-1} += dqp W1
    detail::apply_all(q_t, B, dq, A, in.sv.cells->dh_carry(), d.Hd, true);
  }
};

std::vector<Tensor> backward(const BackwardInputs& in, const std::vector<Tensor>& douts) {
  const Dims& d = in.d;
  const int64_t T = d.T, B = d.B, S = d.S, A = d.A, Dv = d.Dv, Hd = d.Hd;
  const int64_t threads = omp_get_max_threads();
  Backward bw{in,
              nn::StepLinear::columns_of(in.W1, 0, Hd),  // x W1 = x (W1^T)^T, packed once
              douts[0].defined() ? douts[0].data() : nullptr,
              douts[1],
              Tensor::zeros(in.keys.shape()),
              Tensor::zeros(in.values.shape()),
              Tensor::zeros({T * B, A}),
              Tensor::zeros({threads, A}),
              Tensor::empty({threads, S}),
              Tensor::empty({B, Dv})};
  detail::CellStack& cells = *in.sv.cells;
  detail::run_decoder_backward(cells, bw, T);
  // weight gradients: one GEMM each over all T * B rows
  Tensor demb = Tensor::empty(in.emb.shape()), dW1 = Tensor::empty(in.W1.shape());
  std::vector<Tensor> gru = cells.weight_grads(in.emb, in.contexts.data(), 0, demb);  // dW_ih, dW_hh, db_ih, db_hh
  detail::weight_grad(dW1, 0, bw.dqp.data(), A, cells.top(-1), Hd, T * B);  // s_{t-1}, t = 0 .. T-1
  Tensor dv = kernels::sum_axis(bw.dv_part, 0, false);
  Tensor ds0 = cells.dh0()[0];
  cells.end_backward();
  return {demb, bw.dkeys, bw.dvalues, ds0, dW1, dv, gru[0], gru[1], gru[2], gru[3]};
}

}  // namespace

DecoderLoopOutput rnnsearch_decoder(const Tensor& emb, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                    const Tensor& s0, const DecoderLoopWeights& w) {
  const Dims d = check_shapes(emb, keys, values, lengths, s0, w);
  const int64_t T = d.T, B = d.B, S = d.S, A = d.A, Dv = d.Dv, Hd = d.Hd;
  std::vector<int64_t> len = lengths_in_range("rnnsearch_decoder", "lengths", lengths, S);
  DecoderLoopOutput out;
  out.states = Tensor::empty({T, B, Hd});
  out.contexts = Tensor::empty({T, B, Dv});
  RnnWeights gru{w.w_ih.detach(), w.w_hh.detach(), w.b_ih.defined() ? w.b_ih.detach() : Tensor(),
                 w.b_hh.defined() ? w.b_hh.detach() : Tensor()};
  Saved sv{std::make_unique<detail::CellStack>(CellType::Gru, std::vector<RnnWeights>{gru}, T, B, d.E, Dv, Tensor()),
           Tensor::empty({T * B, A}), Tensor::empty({T * B, S})};
  sv.cells->begin(emb, {s0}, {});
  Forward wiring{d, keys, values, w.v, len, out, sv, nn::StepLinear(w.W1, true)};
  detail::run_decoder_forward(*sv.cells, wiring, T);
  if (T > 0) std::memcpy(out.states.data(), sv.cells->top(0), size_t(T * B * Hd) * sizeof(float));  // s_0 .. s_{T-1}
  auto in = std::make_shared<BackwardInputs>(BackwardInputs{d, std::move(len), emb.detach(), keys.detach(),
                                                            values.detach(), w.W1.detach(), w.v.detach(),
                                                            out.contexts.detach(), std::move(sv)});
  autograd::record("rnnsearch_decoder", {emb, keys, values, s0, w.W1, w.v, w.w_ih, w.w_hh, w.b_ih, w.b_hh},
                   {&out.states, &out.contexts},
                   [in](const std::vector<Tensor>& douts) -> std::vector<Tensor> { return backward(*in, douts); });
  return out;
}

}  // namespace attn::models
