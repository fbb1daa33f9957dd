// The instruction-set builds of the kernels this CPU can run (kernels/dispatch.h),
// for the tests that call every build directly by its namespace, and the
// random buffers those tests feed the kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/tensor/random.h"

namespace attn::testing {

inline std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (i <= cpu::detected_isa()) out.push_back(i);
  return out;
}

// n normal draws times scale: a raw kernel's input
inline std::vector<float> random_vec(int64_t n, Rng& rng, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = scale * rng.normal();
  return v;
}

}  // namespace attn::testing
