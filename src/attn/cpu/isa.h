// The CPU's instruction set, chosen once at run time (the dispatch of
// src/attn/kernels/dispatch.h reads it). attn's hot kernels are compiled three
// times, for the x86-64 psABI levels below, and the best one this CPU (and its
// operating system, which must save the wide registers) supports is used,
// as CTranslate2 and ggml do: a binary built anywhere runs anywhere, at the
// speed of the machine it runs on.
//
//   scalar  x86-64 baseline (SSE2): runs on every x86-64 CPU
//   avx2    x86-64-v3: AVX2, FMA, BMI1/2, F16C (Intel Haswell+, AMD Zen+)
//   avx512  x86-64-v4: AVX-512 F, BW, CD, DQ, VL (Intel Skylake-SP+, AMD Zen 4+)
//
// The environment variable ATTN_ISA=scalar|avx2|avx512 caps the choice (it
// never raises it above what the CPU supports), for tests and for users who
// want the same numerics on every machine; `attn --isa` sets the same cap.
#pragma once
#include <string>

namespace attn::cpu {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

// "scalar", "avx2" or "avx512"
const char* isa_name(Isa isa);
// the inverse of isa_name; throws std::invalid_argument naming `what` and the
// valid names for any other text
Isa parse_isa(const std::string& name, const std::string& what);

// the best level this CPU and OS support, ignoring any cap
Isa detected_isa();
// the level the kernels run at: detected_isa(), capped by ATTN_ISA or set_isa_cap
Isa isa();
// caps isa() at `cap` from now on (the kernels chosen afterwards follow it);
// ATTN_ISA, when set, is read on the first call of isa() and this overrides it
void set_isa_cap(Isa cap);

// Dot-product instructions beyond the psABI levels (CPUID leaf 7), for the int8
// and bf16 kernels (kernels/quant_gemm.h). AMX is reported, not used yet.
struct Features {
  bool avx512_vnni = false;  // vpdpbusd on zmm
  bool avx512_bf16 = false;  // vdpbf16ps
  bool avx_vnni = false;     // vpdpbusd on ymm (VEX), AVX2 machines of 2021 on
  bool amx_int8 = false, amx_bf16 = false;
};
// what this CPU has (read once; the wide registers' OS support is detected_isa()'s)
const Features& features();
// whether the int8 / bf16 kernels of the level isa() runs at may use their
// native instructions: AVX-512 VNNI at avx512, AVX-VNNI at avx2; AVX-512 BF16 at avx512
bool native_int8();
bool native_bf16();
// "avx512_vnni avx512_bf16 ..." (the features this CPU has, for `attn --version` and bench records)
std::string feature_names();

}  // namespace attn::cpu
