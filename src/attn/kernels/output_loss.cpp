// Row kernels of the fused output loss (see kernels/output_loss.h). An ISA
// source (kernels/dispatch.h): compiled once per instruction set.
#include "attn/kernels/output_loss.h"

#include "attn/cpu/threading.h"
#include "attn/kernels/vocab_topk.h"
#include "attn/simd/math.h"

// GCC 12 reports the _mm256_undefined_pd() operand inside _mm512_reduce_add_ps
// as uninitialised where it inlines here (the false positive simd/vec.h describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::models::output_loss_kernels::ATTN_SIMD_ISA {
namespace {

struct RowLoss {
  float lse;         // log sum_c exp(logit_c)
  float sum_logits;  // sum_c logit_c
};

// Softmax of one row in place (row becomes p), returning what the loss needs.
RowLoss softmax_row(float* row, int64_t V) {
  using namespace simd;
  const float mx = max_of(row, V);
  vf vs = zero(), vsum = zero();
  const vf vm = set1(mx);
  int64_t i = 0;
  for (; i + kLanes <= V; i += kLanes) {
    vf x = load(row + i);
    vsum = add(vsum, x);
    vf e = simd::exp(sub(x, vm));
    store(row + i, e);
    vs = add(vs, e);
  }
  float s = reduce_add(vs), sl = reduce_add(vsum);
  for (; i < V; ++i) {
    sl += row[i];
    row[i] = __builtin_expf(row[i] - mx);
    s += row[i];
  }
  const vf inv = set1(1.0f / s);
  i = 0;
  for (; i + kLanes <= V; i += kLanes) store(row + i, mul(load(row + i), inv));
  for (; i < V; ++i) row[i] *= 1.0f / s;
  return {mx + __builtin_logf(s), sl};
}

}  // namespace

double loss_block(const LossBlock& b) {
  const int64_t n = b.n, V = b.V;
  const float eps = b.eps, inv_count = b.inv_count;
  double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static) if (n * V > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    float* row = b.logits + i * V;
    const int64_t t = int64_t(b.targets[b.rows[i]]);
    const float lt = row[t];
    RowLoss l = softmax_row(row, V);  // row = p
    // -log p_t = lse - logit_t;  mean_c -log p_c = lse - mean_c logit_c
    total += double((1.0f - eps) * (l.lse - lt) + eps * (l.lse - l.sum_logits / float(V)));
    if (b.grad) {
      // d loss / d logits = (p - (1-eps) onehot(t) - eps/V) / count
      const float sub = eps / float(V);
#pragma omp simd
      for (int64_t c = 0; c < V; ++c) row[c] = (row[c] - sub) * inv_count;
      row[t] -= (1.0f - eps) * inv_count;
    }
  }
  return total;
}

void add_column_sums(const float* rows, int64_t n, int64_t V, float* sums) {
  for (int64_t i = 0; i < n; ++i) {
    const float* row = rows + i * V;
#pragma omp simd
    for (int64_t c = 0; c < V; ++c) sums[c] += row[c];
  }
}

void log_softmax_rows(const float* logits, int64_t N, int64_t V, float* out) {
#pragma omp parallel for schedule(static) if (N * V > kParallelGrain)
  for (int64_t i = 0; i < N; ++i) {
    float* row = out + i * V;
    const float* in = logits + i * V;
    // log p = logit - lse (exact where p underflows); the searches' fused top-k
    // (vocab_topk.h) computes the same lse, so both give identical log p
    const float lse = models::ATTN_SIMD_ISA::log_sum_exp_row(in, V);
    for (int64_t c = 0; c < V; ++c) row[c] = in[c] - lse;
  }
}

}  // namespace attn::models::output_loss_kernels::ATTN_SIMD_ISA
