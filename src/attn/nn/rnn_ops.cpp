// The fused "gru" and "lstm" ops: one direction of one layer over a padded
// batch, forward and hand-written backward, in the manner of cuDNN's RNN
// (Appleyard et al. 2016, "Optimizing Performance of Recurrent Neural Networks
// on GPUs"): the input projection of every step is one GEMM before the
// recurrence, each step is one GEMM plus one fused gate pass, and the weight
// gradients are one GEMM each after it.
//
// Rows are in the packed layout of rnn_recurrence.h (PyTorch's PackedSequence),
// so every per-step GEMM reads a contiguous block, padding is never computed,
// and the stacked [total, .] buffers feed the big weight-gradient GEMMs
// directly. Legend as in rnn.h; total = sum of lengths (packed rows), GH = G*H.
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"
#include "attn/kernels/rnn_gates.h"
#include "attn/nn/rnn.h"
#include "attn/nn/rnn_recurrence.h"
#include "attn/tensor/kernels.h"

#include <omp.h>

namespace attn {
namespace {

using rnn::HiddenSlice;
using rnn::Schedule;
using rnn::StepWeight;

enum class Cell { Gru, Lstm };

struct Dims {
  int64_t batch, seq_len, in, H, G;
};

void check_state(const char* op, const char* name, const Tensor& t, int64_t batch, int64_t H) {
  if (t.defined() && (t.dim() != 2 || t.size(0) != batch || t.size(1) != H))
    throw std::invalid_argument(std::string(op) + ": " + name + " must be [batch, hidden] = [" + std::to_string(batch) +
                                ", " + std::to_string(H) + "], got " + t.shape().str());
}

Dims check_args(const char* op, int64_t G, const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0,
                const Tensor& c0, const RnnWeights& w) {
  if (!x.defined() || x.dim() != 3)
    throw std::invalid_argument(std::string(op) + ": x must be [batch, seq_len, in], got " + shape_str(x));
  if (!w.weight_ih.defined() || !w.weight_hh.defined())
    throw std::invalid_argument(std::string(op) + ": weight_ih and weight_hh are required");
  Dims d{x.size(0), x.size(1), x.size(2), w.weight_hh.size(-1), G};
  if (w.weight_hh.dim() != 2 || w.weight_hh.size(0) != G * d.H)
    throw std::invalid_argument(std::string(op) + ": weight_hh must be [" + std::to_string(G) + "*hidden, hidden], got " +
                                w.weight_hh.shape().str());
  if (w.weight_ih.dim() != 2 || w.weight_ih.size(0) != G * d.H || w.weight_ih.size(1) != d.in)
    throw std::invalid_argument(std::string(op) + ": weight_ih must be [" + std::to_string(G * d.H) + ", " +
                                std::to_string(d.in) + "] for x " + x.shape().str() + ", got " + w.weight_ih.shape().str());
  for (const Tensor* b : {&w.bias_ih, &w.bias_hh})
    if (b->defined() && (b->dim() != 1 || b->size(0) != G * d.H))
      throw std::invalid_argument(std::string(op) + ": biases must be [" + std::to_string(G * d.H) + "], got " +
                                  b->shape().str());
  if (int64_t(lengths.size()) != d.batch)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(lengths.size()) + " lengths for x " +
                                x.shape().str());
  for (int64_t len : lengths)
    if (len < 0 || len > d.seq_len)
      throw std::invalid_argument(std::string(op) + ": length " + std::to_string(len) + " outside [0, seq_len = " +
                                  std::to_string(d.seq_len) + "]");
  check_state(op, "h0", h0, d.batch, d.H);
  check_state(op, "c0", c0, d.batch, d.H);
  return d;
}

// What backward needs, saved by forward. Packed rows, see the file comment.
struct Saved {
  Tensor xp;      // [total, in]  inputs, packed
  Tensor gates;   // [total, GH]  activated gates (GRU r, z, n; LSTM i, f, g, o)
  Tensor hprev;   // [total, H]   h before each step
  Tensor ghn;     // [total, H]   GRU: W_hn h + b_hn
  Tensor cprev;   // [total, H]   LSTM: c before each step
  Tensor tanh_c;  // [total, H]   LSTM: tanh(c') after each step
};

struct ForwardResult {
  Tensor y, h_n, c_n;  // [batch, seq_len, H], [batch, H], [batch, H] (c_n: LSTM only)
  Saved saved;
};

// Copies rows of `src` [batch, H] (zeros when undefined) into `dst` rows in sorted
// order: dst[j] = src[order[j]] for j < n.
void gather_sorted(float* dst, const Tensor& src, const Schedule& sch, int64_t n, int64_t H) {
  for (int64_t j = 0; j < n; ++j) {
    if (src.defined())
      std::memcpy(dst + j * H, src.data() + sch.order[j] * H, size_t(H) * sizeof(float));
    else
      std::memset(dst + j * H, 0, size_t(H) * sizeof(float));
  }
}

ForwardResult run_forward(Cell cell, const Schedule& sch, const Dims& d, const Tensor& x, const Tensor& h0,
                          const Tensor& c0, const RnnWeights& w) {
  const int64_t B = d.batch, T = d.seq_len, in = d.in, H = d.H, G = d.G, GH = d.G * d.H, total = sch.total;
  const bool lstm = cell == Cell::Lstm;
  ForwardResult f;
  Saved& sv = f.saved;

  // Pack the valid inputs, then project them all at once: gates = Xp W_ih^T  [total, GH]
  sv.xp = Tensor::empty(Shape{total, in});
  {
    float* xp = sv.xp.data();
    const float* px = x.data();
#pragma omp parallel for if (total * in > kParallelGrain)
    for (int64_t r = 0; r < total; ++r) std::memcpy(xp + r * in, px + sch.row_bt[r] * in, size_t(in) * sizeof(float));
  }
  sv.gates = Tensor::empty(Shape{total, GH});
  kernels::gemm(false, true, total, GH, in, 1.0f, sv.xp.data(), in, w.weight_ih.data(), in, 0.0f, sv.gates.data(), GH);

  const int64_t n0 = sch.steps ? sch.batch_sizes[0] : 0;
  sv.hprev = Tensor::empty(Shape{total, H});
  gather_sorted(sv.hprev.data(), h0, sch, n0, H);
  if (lstm) {
    sv.cprev = Tensor::empty(Shape{total, H});
    sv.tanh_c = Tensor::empty(Shape{total, H});
    gather_sorted(sv.cprev.data(), c0, sch, n0, H);
  } else {
    sv.ghn = Tensor::empty(Shape{total, H});
  }

  // Outputs: zeros at padding; a sequence of length 0 keeps its initial state.
  f.y = Tensor::empty(Shape{B, T, H});
  f.h_n = Tensor::empty(Shape{B, H});
  if (lstm) f.c_n = Tensor::empty(Shape{B, H});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = sch.lengths[b];
    std::memset(f.y.data() + (b * T + len) * H, 0, size_t((T - len) * H) * sizeof(float));
    if (len == 0) {
      for (auto [state, out] : {std::pair{&h0, &f.h_n}, std::pair{&c0, &f.c_n}}) {
        if (!out->defined()) continue;
        if (state->defined())
          std::memcpy(out->data() + b * H, state->data() + b * H, size_t(H) * sizeof(float));
        else
          std::memset(out->data() + b * H, 0, size_t(H) * sizeof(float));
      }
    }
  }

  Tensor b_ih = or_zeros(w.bias_ih, {GH}), b_hh = or_zeros(w.bias_hh, {GH});
  Tensor gh = Tensor::empty(Shape{n0, GH});  // h W_hh^T of one step
  // Where packed row r's h' goes: its output position, and the next step's
  // h_prev row (or h_n after the sequence's last step); the same for c'.
  std::vector<float*> y_rows(total), next_rows(total), c_rows(lstm ? total : 0);
  float *hprev = sv.hprev.data(), *gates = sv.gates.data(), *y = f.y.data();
  for (int64_t st = 0; st < sch.steps; ++st) {
    const int64_t r0 = sch.offsets[st], n_next = sch.batch_sizes[st + 1];
    for (int64_t j = 0; j < sch.batch_sizes[st]; ++j) {
      const int64_t b = sch.order[j], next = sch.offsets[st + 1] + j;
      y_rows[r0 + j] = y + sch.row_bt[r0 + j] * H;
      next_rows[r0 + j] = j < n_next ? hprev + next * H : f.h_n.data() + b * H;
      if (lstm) c_rows[r0 + j] = j < n_next ? sv.cprev.data() + next * H : f.c_n.data() + b * H;
    }
  }

  const StepWeight whh(w.weight_hh.data(), G, H, /*transposed=*/true, sch.steps);
  const int team = rnn::recurrence_threads(n0, H, GH);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    const HiddenSlice sl = rnn::hidden_slice(omp_get_thread_num(), omp_get_num_threads(), H);
    for (int64_t st = 0; st < sch.steps; ++st) {
      const int64_t n = sch.batch_sizes[st], r0 = sch.offsets[st];
      // gh[n, GH] = h_prev[n, H] W_hh^T, this thread's columns g*H + [k0, k1) of every gate g
      whh.multiply(n, hprev + r0 * H, sl, gh.data(), /*accumulate=*/false);
      if (!lstm) {
        rnn_kernels::GruForward a;
        a.n = n, a.hidden = H, a.k_begin = sl.k0, a.k_end = sl.k1;
        a.gates = gates + r0 * GH;
        a.gh = gh.data();
        a.b_ih = b_ih.data(), a.b_hh = b_hh.data();
        a.h_prev = hprev + r0 * H;
        a.ghn = sv.ghn.data() + r0 * H;
        a.y_rows = y_rows.data() + r0, a.next_rows = next_rows.data() + r0;
        rnn_kernels::gru_forward(a);
      } else {
        rnn_kernels::LstmForward a;
        a.n = n, a.hidden = H, a.k_begin = sl.k0, a.k_end = sl.k1;
        a.gates = gates + r0 * GH;
        a.gh = gh.data();
        a.b_ih = b_ih.data(), a.b_hh = b_hh.data();
        a.c_prev = sv.cprev.data() + r0 * H;
        a.tanh_c = sv.tanh_c.data() + r0 * H;
        a.y_rows = y_rows.data() + r0, a.next_rows = next_rows.data() + r0, a.c_rows = c_rows.data() + r0;
        rnn_kernels::lstm_forward(a);
      }
      // the next step's GEMM reads every column of the h' just written
#pragma omp barrier
    }
  }
  return f;
}

// Which inputs want a gradient (fixed at forward time, like the other ops).
struct Needs {
  bool x = false, h0 = false, c0 = false, w_ih = false, w_hh = false, b_ih = false, b_hh = false;
};

struct Grads {
  Tensor dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh;
};

// Scatters rows [n, H] in sorted order back to batch order: out[order[j]] = src[j].
Tensor scatter_sorted(const float* src, const Schedule& sch, int64_t H) {
  Tensor out = Tensor::empty(Shape{sch.batch, H});
  for (int64_t j = 0; j < sch.batch; ++j)
    std::memcpy(out.data() + sch.order[j] * H, src + j * H, size_t(H) * sizeof(float));
  return out;
}

Grads run_backward(Cell cell, const Schedule& sch, const Dims& d, const Saved& sv, const Tensor& w_ih,
                   const Tensor& w_hh, const Tensor& dy, const Tensor& dh_n, const Tensor& dc_n, const Needs& need) {
  const int64_t B = d.batch, in = d.in, H = d.H, GH = d.G * d.H, total = sch.total;
  const bool lstm = cell == Cell::Lstm;
  // Carries in sorted order: d(loss)/d(h) and d(loss)/d(c) of the state after the
  // current step. A row enters at its last step with d(h_n), d(c_n).
  Tensor dh = Tensor::empty(Shape{B, H}), dc;
  gather_sorted(dh.data(), dh_n, sch, B, H);
  if (lstm) {
    dc = Tensor::empty(Shape{B, H});
    gather_sorted(dc.data(), dc_n, sch, B, H);
  }
  Tensor dgx = Tensor::empty(Shape{total, GH});
  Tensor dgh = lstm ? dgx : Tensor::empty(Shape{total, GH});  // LSTM: x- and h-side gate gradients are equal
  Tensor zero_row = Tensor::zeros(Shape{H});                 // d(y) when the output has no gradient
  std::vector<const float*> dy_rows(total);                  // packed row -> its d(y) row
  for (int64_t r = 0; r < total; ++r) dy_rows[r] = dy.defined() ? dy.data() + sch.row_bt[r] * H : zero_row.data();

  const StepWeight whh(w_hh.data(), d.G, H, /*transposed=*/false, sch.steps);
  const int team = rnn::recurrence_threads(sch.steps ? sch.batch_sizes[0] : 0, H, GH);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    // Same slices as the forward: a thread's gate pass reads and writes only its
    // hidden units of dh / dc, and its GEMM produces exactly those units of dh_prev.
    const HiddenSlice sl = rnn::hidden_slice(omp_get_thread_num(), omp_get_num_threads(), H);
    for (int64_t st = sch.steps - 1; st >= 0; --st) {
      const int64_t n = sch.batch_sizes[st], r0 = sch.offsets[st];
      if (!lstm) {
        rnn_kernels::GruBackward a;
        a.n = n, a.hidden = H, a.k_begin = sl.k0, a.k_end = sl.k1;
        a.gates = sv.gates.data() + r0 * GH;
        a.ghn = sv.ghn.data() + r0 * H;
        a.h_prev = sv.hprev.data() + r0 * H;
        a.dy_rows = dy_rows.data() + r0;
        a.dh = dh.data();
        a.dgx = dgx.data() + r0 * GH, a.dgh = dgh.data() + r0 * GH;
        rnn_kernels::gru_backward(a);
      } else {
        rnn_kernels::LstmBackward a;
        a.n = n, a.hidden = H, a.k_begin = sl.k0, a.k_end = sl.k1;
        a.gates = sv.gates.data() + r0 * GH;
        a.c_prev = sv.cprev.data() + r0 * H;
        a.tanh_c = sv.tanh_c.data() + r0 * H;
        a.dy_rows = dy_rows.data() + r0;
        a.dh = dh.data(), a.dc = dc.data();
        a.dgates = dgx.data() + r0 * GH;
        rnn_kernels::lstm_backward(a);
      }
      // the GEMM below reads every gate column of this step
#pragma omp barrier
      // dh_prev[n, k0:k1] (+)= dgh[n, GH] W_hh[GH, k0:k1]; the GRU adds to the
      // direct path dh z left by the kernel, the LSTM's h reaches h' only
      // through the gates. At step 0 the result is d(h0): skipped when unwanted.
      if (st > 0 || need.h0) whh.multiply(n, dgh.data() + r0 * GH, sl, dh.data(), /*accumulate=*/!lstm);
    }
  }

  Grads g;
  if (need.h0) g.dh0 = scatter_sorted(dh.data(), sch, H);
  if (need.c0) g.dc0 = scatter_sorted(dc.data(), sch, H);
  if (need.w_hh) {  // dW_hh[GH, H] = sum over steps dgh^T h_prev = dgh^T[GH, total] Hprev[total, H]
    g.dw_hh = Tensor::empty(w_hh.shape());
    kernels::gemm(true, false, GH, H, total, 1.0f, dgh.data(), GH, sv.hprev.data(), H, 0.0f, g.dw_hh.data(), H);
  }
  if (need.w_ih) {  // dW_ih[GH, in] = dgx^T[GH, total] Xp[total, in]
    g.dw_ih = Tensor::empty(w_ih.shape());
    kernels::gemm(true, false, GH, in, total, 1.0f, dgx.data(), GH, sv.xp.data(), in, 0.0f, g.dw_ih.data(), in);
  }
  if (need.x) {  // dXp[total, in] = dgx[total, GH] W_ih[GH, in], scattered to [batch, seq_len, in]
    Tensor dxp = Tensor::empty(Shape{total, in});
    kernels::gemm(false, false, total, in, GH, 1.0f, dgx.data(), GH, w_ih.data(), in, 0.0f, dxp.data(), in);
    g.dx = Tensor::zeros(Shape{B, d.seq_len, in});
    float* px = g.dx.data();
    const float* pp = dxp.data();
#pragma omp parallel for if (total * in > kParallelGrain)
    for (int64_t r = 0; r < total; ++r) std::memcpy(px + sch.row_bt[r] * in, pp + r * in, size_t(in) * sizeof(float));
  }
  if (need.b_ih) g.db_ih = kernels::sum_axis(dgx, 0, false);  // b_ih enters every gate pre-activation once
  if (need.b_hh) g.db_hh = kernels::sum_axis(dgh, 0, false);
  return g;
}

Needs needs_of(const Tensor& x, const Tensor& h0, const Tensor& c0, const RnnWeights& w) {
  auto rg = [](const Tensor& t) { return t.defined() && t.requires_grad(); };
  return {rg(x), rg(h0), rg(c0), rg(w.weight_ih), rg(w.weight_hh), rg(w.bias_ih), rg(w.bias_hh)};
}

}  // namespace

std::vector<int64_t> lengths_from_tensor(const Tensor& lengths) {
  if (!lengths.defined() || lengths.dim() != 1)
    throw std::invalid_argument("lengths must be a [batch] tensor, got " + shape_str(lengths));
  std::vector<int64_t> out(lengths.numel());
  for (int64_t i = 0; i < lengths.numel(); ++i) {
    float v = lengths.data()[i];
    if (!(v >= 0.0f) || v != float(int64_t(v)))
      throw std::invalid_argument("lengths[" + std::to_string(i) + "] = " + std::to_string(v) +
                                  " is not a whole number >= 0");
    out[i] = int64_t(v);
  }
  return out;
}

GruResult gru(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const RnnWeights& w,
              RnnDirection direction) {
  Dims d = check_args("gru", 3, x, lengths, h0, Tensor(), w);
  auto sch = std::make_shared<const Schedule>(rnn::make_schedule(lengths, d.seq_len, direction == RnnDirection::Reverse));
  ForwardResult f = run_forward(Cell::Gru, *sch, d, x, h0, Tensor(), w);
  Needs need = needs_of(x, h0, Tensor(), w);
  autograd::record("gru", {x, h0, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh}, {&f.y, &f.h_n},
                   [sch, d, sv = f.saved, w_ih = w.weight_ih.detach(), w_hh = w.weight_hh.detach(),
                    need](const std::vector<Tensor>& douts) -> std::vector<Tensor> {
                     Grads g = run_backward(Cell::Gru, *sch, d, sv, w_ih, w_hh, douts[0], douts[1], Tensor(), need);
                     return {g.dx, g.dh0, g.dw_ih, g.dw_hh, g.db_ih, g.db_hh};
                   });
  return {f.y, f.h_n};
}

GruResult gru(const Tensor& x, const Tensor& lengths, const Tensor& h0, const RnnWeights& w, RnnDirection direction) {
  return gru(x, lengths_from_tensor(lengths), h0, w, direction);
}

LstmResult lstm(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const Tensor& c0,
                const RnnWeights& w, RnnDirection direction) {
  Dims d = check_args("lstm", 4, x, lengths, h0, c0, w);
  auto sch = std::make_shared<const Schedule>(rnn::make_schedule(lengths, d.seq_len, direction == RnnDirection::Reverse));
  ForwardResult f = run_forward(Cell::Lstm, *sch, d, x, h0, c0, w);
  Needs need = needs_of(x, h0, c0, w);
  autograd::record("lstm", {x, h0, c0, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh}, {&f.y, &f.h_n, &f.c_n},
                   [sch, d, sv = f.saved, w_ih = w.weight_ih.detach(), w_hh = w.weight_hh.detach(),
                    need](const std::vector<Tensor>& douts) -> std::vector<Tensor> {
                     Grads g = run_backward(Cell::Lstm, *sch, d, sv, w_ih, w_hh, douts[0], douts[1], douts[2], need);
                     return {g.dx, g.dh0, g.dc0, g.dw_ih, g.dw_hh, g.db_ih, g.db_hh};
                   });
  return {f.y, f.h_n, f.c_n};
}

LstmResult lstm(const Tensor& x, const Tensor& lengths, const Tensor& h0, const Tensor& c0, const RnnWeights& w,
                RnnDirection direction) {
  return lstm(x, lengths_from_tensor(lengths), h0, c0, w, direction);
}

}  // namespace attn
