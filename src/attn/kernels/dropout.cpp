// Counter-based element dropout (see kernels/dropout.h). An ISA source: the
// integer hash vectorises per instruction set; every build draws the same pattern.
#include "attn/kernels/dropout.h"

#include <bit>

#include "attn/cpu/threading.h"
#include "attn/kernels/dropout_hash.h"
#include "attn/simd/vec.h"  // ATTN_SIMD_ISA, the namespace of this build

namespace attn::kernels::dropout::ATTN_SIMD_ISA {

void apply(const float* x, float* out, int64_t rows, int64_t n, float p, uint64_t seed) {
  const uint32_t threshold = attention::detail::dropout_threshold(p);
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for if (rows * n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t key = attention::detail::dropout_row_key(seed, uint64_t(r));
    const float* xr = x + r * n;
    float* orow = out + r * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      // dropout_draw(key, j), written out so that it vectorises
      uint32_t h = key + uint32_t(j) * 0x85ebca77u;
      h ^= h >> 16;
      h *= 0x85ebca6bu;
      h ^= h >> 13;
      h *= 0xc2b2ae35u;
      h ^= h >> 16;
      // kept & an all-ones or all-zeros mask, not `keep ? x[j] * scale : 0`: that
      // loads x[j] under the condition, which GCC 12 will not if-convert without
      // masked loads (AVX-512 has them), so on AVX2 the loop ran scalar with a
      // branch that mispredicted at dropped elements (7% of a Transformer
      // training step on Zen 3).
      const uint32_t mask = 0u - uint32_t((h >> 8) >= threshold);
      orow[j] = std::bit_cast<float>(std::bit_cast<uint32_t>(xr[j] * scale) & mask);
    }
  }
}

}  // namespace attn::kernels::dropout::ATTN_SIMD_ISA
