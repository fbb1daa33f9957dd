// Log-sum-exp and top-k of logits rows (see vocab_topk.h). An ISA source
// (kernels/dispatch.h): compiled once per instruction set.
#include "attn/kernels/vocab_topk.h"

#include "attn/kernels/vocab_topk_list.h"
#include "attn/simd/math.h"

// GCC 12 reports the _mm256_undefined_pd() operand inside _mm512_reduce_add_ps
// as uninitialised where it inlines here (the false positive simd/vec.h describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::models::ATTN_SIMD_ISA {

float log_sum_exp_row(const float* x, int64_t V) {
  using namespace simd;
  const float mx = max_of(x, V);
  vf vs = zero();
  const vf vm = set1(mx);
  int64_t i = 0;
  for (; i + kLanes <= V; i += kLanes) vs = add(vs, simd::exp(sub(load(x + i), vm)));
  float s = reduce_add(vs);
  for (; i < V; ++i) s += __builtin_expf(x[i] - mx);
  return mx + __builtin_logf(s);
}

void top_k_add(TopKList& list, const float* x, int64_t count, int first_token, float shift) {
  using namespace simd;
  const vf vshift = set1(shift);
  int64_t j = 0;
  alignas(64) float y[kLanes];
  for (; j + kLanes <= count; j += kLanes) {
    const vf yv = sub(load(x + j), vshift);
    // until the list is full every value enters; then only those above its last
    unsigned hit = list.n < list.k ? (1u << kLanes) - 1u : bits(lt(set1(list.values[list.k - 1]), yv));
    if (!hit) continue;
    store(y, yv);
    // visit only the lanes above the threshold, in token order (the list's tie rule)
    for (; hit; hit &= hit - 1u) {
      const int l = __builtin_ctz(hit);
      if (topk::enters(list, y[l])) topk::insert(list, first_token + int(j) + l, y[l]);
    }
  }
  for (; j < count; ++j) {
    const float yv = x[j] - shift;
    if (topk::enters(list, yv)) topk::insert(list, first_token + int(j), yv);
  }
}

void top_k_row(const float* x, int64_t V, float shift, int64_t k, int* tokens, float* values) {
  TopKList list{tokens, values, k};
  ATTN_SIMD_ISA::top_k_add(list, x, V, 0, shift);  // qualified: ADL would also find the dispatching one
}

}  // namespace attn::models::ATTN_SIMD_ISA
