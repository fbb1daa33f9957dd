// Packed-sequence schedule, thread slices and the step GEMM dispatch (rnn_recurrence.h).
#include "attn/nn/rnn_recurrence.h"

#include <omp.h>

#include <algorithm>
#include <numeric>

#include "attn/tensor/kernels.h"

namespace attn::rnn {

Schedule make_schedule(const std::vector<int64_t>& lengths, int64_t seq_len, bool reverse) {
  Schedule s;
  s.batch = int64_t(lengths.size());
  s.seq_len = seq_len;
  s.lengths = lengths;
  s.order.resize(s.batch);
  std::iota(s.order.begin(), s.order.end(), int64_t(0));
  std::stable_sort(s.order.begin(), s.order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  s.steps = s.batch ? lengths[s.order[0]] : 0;
  s.batch_sizes.assign(s.steps + 1, 0);
  s.offsets.assign(s.steps + 1, 0);
  for (int64_t st = 0; st < s.steps; ++st) {
    int64_t n = 0;
    while (n < s.batch && lengths[s.order[n]] > st) ++n;
    s.batch_sizes[st] = n;
    s.offsets[st + 1] = s.offsets[st] + n;
  }
  s.total = s.offsets[s.steps];
  s.row_bt.resize(s.total);
  for (int64_t st = 0; st < s.steps; ++st)
    for (int64_t j = 0; j < s.batch_sizes[st]; ++j) {
      int64_t b = s.order[j];
      int64_t t = reverse ? lengths[b] - 1 - st : st;
      s.row_bt[s.offsets[st] + j] = b * seq_len + t;
    }
  return s;
}

HiddenSlice hidden_slice(int tid, int threads, int64_t H) {
  constexpr int64_t P = rnn_gemm::kPanel;
  const int64_t chunk = ((H + threads - 1) / threads + P - 1) / P * P;
  const int64_t k0 = std::min(H, tid * chunk);
  return {k0, std::min(H, k0 + chunk)};
}

int recurrence_threads(int64_t rows, int64_t H, int64_t GH) {
  constexpr int64_t kGrain = int64_t(1) << 18;  // multiply-adds per step
  const int max = omp_get_max_threads();
  if (max <= 1 || rows * GH * H < kGrain) return 1;
  return int(std::min<int64_t>(max, (H + rnn_gemm::kPanel - 1) / rnn_gemm::kPanel));
}

StepWeight::StepWeight(const float* w_hh, int64_t G, int64_t H, bool transposed, int64_t steps)
    : w(w_hh), G(G), H(H), transposed(transposed) {
  if (steps < 2) return;
  packed = transposed ? rnn_gemm::pack_transposed(w_hh, H, G, H) : rnn_gemm::pack(w_hh, G * H, H);
}

void StepWeight::multiply(int64_t n, const float* a, const HiddenSlice& sl, float* out, bool accumulate) const {
  if (sl.k1 <= sl.k0) return;
  const int64_t GH = G * H;
  if (packed.data.defined()) {
    if (transposed)
      rnn_gemm::gemm_packed(n, a, H, packed, sl.k0, sl.k1, out, GH, accumulate);
    else
      rnn_gemm::gemm_packed(n, a, GH, packed, sl.k0, sl.k1, out, H, accumulate);
    return;
  }
  const float beta = accumulate ? 1.0f : 0.0f;
  if (!transposed) {
    kernels::gemm(false, false, n, sl.k1 - sl.k0, GH, 1.0f, a, GH, w + sl.k0, H, beta, out + sl.k0, H);
  } else if (sl.k0 == 0 && sl.k1 == H) {  // the whole width: one call
    kernels::gemm(false, true, n, GH, H, 1.0f, a, H, w, H, beta, out, GH);
  } else {
    for (int64_t g = 0; g < G; ++g)
      kernels::gemm(false, true, n, sl.k1 - sl.k0, H, 1.0f, a, H, w + (g * H + sl.k0) * H, H, beta,
                    out + g * H + sl.k0, GH);
  }
}

}  // namespace attn::rnn
