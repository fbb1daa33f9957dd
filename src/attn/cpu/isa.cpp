#include "attn/cpu/isa.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>

namespace attn::cpu {
namespace {

// -1: not read yet; else the capped level
std::atomic<int> g_isa{-1};

Isa read_env_cap(Isa detected) {
  const char* env = std::getenv("ATTN_ISA");
  if (!env || !*env) return detected;
  Isa cap = parse_isa(env, "environment variable ATTN_ISA");
  return cap < detected ? cap : detected;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::scalar: return "scalar";
  }
  return "scalar";
}

Isa parse_isa(const std::string& name, const std::string& what) {
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512})
    if (name == isa_name(i)) return i;
  throw std::invalid_argument(what + ": unknown instruction set '" + name + "' (scalar, avx2 or avx512)");
}

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does
// not know "f16c" (a compile error), gcc's does; CPUID serves both. Its OS
// support is the YMM state that the "avx2" check already covers.
static bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}

Isa detected_isa() {
  // The compiler runtime's checks include the OS's support (XCR0 saves the YMM /
  // ZMM state). Feature by feature rather than "x86-64-v4", which clang 14's
  // runtime does not know; F16C from CPUID (cpu_has_f16c).
  __builtin_cpu_init();
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && cpu_has_f16c();
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  return v4 ? Isa::avx512 : v3 ? Isa::avx2 : Isa::scalar;
}

Isa isa() {
  int v = g_isa.load(std::memory_order_acquire);
  if (v >= 0) return Isa(v);
  Isa chosen = read_env_cap(detected_isa());
  int expected = -1;
  g_isa.compare_exchange_strong(expected, int(chosen), std::memory_order_acq_rel);
  return Isa(g_isa.load(std::memory_order_acquire));
}

const Features& features() {
  static const Features f = [] {
    Features r;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return r;
    r.avx512_vnni = ecx & (1u << 11);
    r.amx_bf16 = edx & (1u << 22);
    r.amx_int8 = (edx & (1u << 24)) && (edx & (1u << 25));
    if (eax >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) {  // sub-leaf 1 exists
      r.avx_vnni = eax & (1u << 4);
      r.avx512_bf16 = eax & (1u << 5);
    }
    return r;
  }();
  return f;
}

bool native_int8() {
  const Isa level = isa();
  return (level == Isa::avx512 && features().avx512_vnni) || (level == Isa::avx2 && features().avx_vnni);
}

bool native_bf16() { return isa() == Isa::avx512 && features().avx512_bf16; }

std::string feature_names() {
  const Features& f = features();
  std::string out;
  auto add = [&](bool has, const char* name) {
    if (has) out += (out.empty() ? "" : " ") + std::string(name);
  };
  add(f.avx512_vnni, "avx512_vnni"), add(f.avx512_bf16, "avx512_bf16"), add(f.avx_vnni, "avx_vnni");
  add(f.amx_int8, "amx_int8"), add(f.amx_bf16, "amx_bf16");
  return out;
}

void set_isa_cap(Isa cap) {
  Isa detected = detected_isa();
  g_isa.store(int(cap < detected ? cap : detected), std::memory_order_release);
}

}  // namespace attn::cpu
