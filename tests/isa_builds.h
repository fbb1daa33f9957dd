// The instruction-set builds of the kernels this CPU can run (kernels/dispatch.h),
// for the tests that call every build directly by its namespace.
#pragma once
#include <vector>

#include "attn/cpu/isa.h"

namespace attn::testing {

inline std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (i <= cpu::detected_isa()) out.push_back(i);
  return out;
}

}  // namespace attn::testing
