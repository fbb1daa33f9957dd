// One GRU / LSTM layer step of a fused decoder loop (see the header): the gate
// kernels of kernels/rnn_gates.h over contiguous row ranges, one per thread.
#include "attn/models/rnn/decoder_cell.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "attn/cpu/threading.h"
#include "attn/kernels/rnn_gates.h"

namespace attn::models::detail {
namespace {

// Rows per thread for a gate pass over B rows of Hd units (all rows on one
// thread when the pass is too small to share).
int64_t row_chunk(int64_t B, int64_t Hd) {
  const bool par = B > 1 && B * Hd * 8 > kParallelGrain;
  return par ? (B + omp_get_max_threads() - 1) / omp_get_max_threads() : B;
}

}  // namespace

void cell_forward(const CellForward& f) {
  const int64_t B = f.B, Hd = f.Hd, G = gate_count(f.cell) * Hd;
  std::vector<float*> y(static_cast<size_t>(B)), next(static_cast<size_t>(B)), c(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    y[size_t(b)] = f.h + b * Hd;
    next[size_t(b)] = (f.h_copy ? f.h_copy : f.h) + b * Hd;
    if (f.c) c[size_t(b)] = f.c + b * Hd;
  }
  const int64_t chunk = row_chunk(B, Hd);
#pragma omp parallel for schedule(static) if (chunk < B)
  for (int64_t r0 = 0; r0 < B; r0 += chunk) {
    const int64_t n = std::min(chunk, B - r0);
    if (f.cell == CellType::Gru) {
      rnn_kernels::GruForward a;
      a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
      a.gates = f.gates + r0 * G, a.gh = f.gh + r0 * G, a.b_ih = f.b_ih, a.b_hh = f.b_hh;
      a.h_prev = f.h_prev + r0 * Hd, a.ghn = f.ghn + r0 * Hd;
      a.y_rows = y.data() + r0, a.next_rows = next.data() + r0;
      rnn_kernels::gru_forward(a);
    } else {
      rnn_kernels::LstmForward a;
      a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
      a.gates = f.gates + r0 * G, a.gh = f.gh + r0 * G, a.b_ih = f.b_ih, a.b_hh = f.b_hh;
      a.c_prev = f.c_prev + r0 * Hd, a.tanh_c = f.tanh_c + r0 * Hd;
      a.y_rows = y.data() + r0, a.next_rows = next.data() + r0, a.c_rows = c.data() + r0;
      rnn_kernels::lstm_forward(a);
    }
  }
}

void cell_backward(const CellBackward& b) {
  const int64_t B = b.B, Hd = b.Hd, G = gate_count(b.cell) * Hd;
  std::vector<const float*> dy(static_cast<size_t>(B));
  for (int64_t r = 0; r < B; ++r) dy[size_t(r)] = b.dy ? b.dy + r * Hd : b.zero_row;
  const int64_t chunk = row_chunk(B, Hd);
#pragma omp parallel for schedule(static) if (chunk < B)
  for (int64_t r0 = 0; r0 < B; r0 += chunk) {
    const int64_t n = std::min(chunk, B - r0);
    if (b.cell == CellType::Gru) {
      rnn_kernels::GruBackward a;
      a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
      a.gates = b.gates + r0 * G, a.ghn = b.ghn + r0 * Hd, a.h_prev = b.h_prev + r0 * Hd;
      a.dy_rows = dy.data() + r0;
      a.dh = b.dh + r0 * Hd, a.dgx = b.dgx + r0 * G, a.dgh = b.dgh + r0 * G;
      rnn_kernels::gru_backward(a);
    } else {
      rnn_kernels::LstmBackward a;
      a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
      a.gates = b.gates + r0 * G, a.c_prev = b.c_prev + r0 * Hd, a.tanh_c = b.tanh_c + r0 * Hd;
      a.dy_rows = dy.data() + r0;
      a.dh = b.dh + r0 * Hd, a.dc = b.dc + r0 * Hd, a.dgates = b.dgx + r0 * G;
      rnn_kernels::lstm_backward(a);
    }
  }
}

}  // namespace attn::models::detail
