// Run-time instruction-set dispatch of attn's hot kernels (internal header).
//
// A kernel source file listed in ATTN_ISA_SOURCES (CMakeLists.txt) is compiled
// three times, with -march=x86-64, -march=x86-64-v3 and -march=x86-64-v4, and
// defines its entry points inside `namespace ATTN_SIMD_ISA` (simd/vec.h names
// it after the compiler's target: scalar, avx2, avx512), so the three builds
// link side by side. Its header declares the entry points in all three
// namespaces with ATTN_ISA_DECLARE and calls them through ATTN_ISA_CALL, which
// picks the one for cpu::isa() (the best the CPU supports, capped by ATTN_ISA).
//
//   // rows_gemm.h                            // rows_gemm.cpp (an ISA source)
//   ATTN_ISA_DECLARE(void gemm_wt(...);)      namespace attn::rows_gemm::ATTN_SIMD_ISA {
//   inline void gemm_wt(...) {                void gemm_wt(...) { ...simd::vf... }
//     ATTN_ISA_CALL(gemm_wt, ...);            }
//   }
//
// An ISA source must not define anything with external linkage outside its
// ISA namespace, and must not instantiate a template or inline function of a
// header (std::vector, Tensor, ...) that other code also instantiates: the
// linker keeps one copy of such a function, and an AVX-512 copy called from
// baseline code stops an AVX2 machine with an illegal instruction. Keep ISA
// sources to raw pointers and the simd/ headers; tests/isa_symbols.sh checks
// their object files (no weak or global symbol outside the ISA namespaces).
#pragma once
#include "attn/cpu/isa.h"

// declares `decls` (function declarations) in the namespaces avx512, avx2 and
// scalar of the enclosing namespace
#define ATTN_ISA_DECLARE(...)  \
  namespace avx512 {           \
  __VA_ARGS__                  \
  }                            \
  namespace avx2 {             \
  __VA_ARGS__                  \
  }                            \
  namespace scalar {           \
  __VA_ARGS__                  \
  }

// calls fn(args...) of the namespace of cpu::isa(), from the namespace that
// holds the ATTN_ISA_DECLARE
#define ATTN_ISA_CALL(fn, ...)                                \
  switch (::attn::cpu::isa()) {                               \
    case ::attn::cpu::Isa::avx512: return avx512::fn(__VA_ARGS__); \
    case ::attn::cpu::Isa::avx2: return avx2::fn(__VA_ARGS__);     \
    case ::attn::cpu::Isa::scalar: break;                     \
  }                                                           \
  return scalar::fn(__VA_ARGS__)
