#include "attn/cpu/blas.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "attn/cpu/isa.h"

namespace attn::cpu {
namespace {

// CBLAS's enum values (cblas.h): attn needs no BLAS header to build
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using SgemvFn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using SetThreadsFn = void (*)(int);
using StringFn = char* (*)();
using IntFn = int (*)();

struct Blas {
  BlasInfo info;
  SgemmFn sgemm = nullptr;
  SgemvFn sgemv = nullptr;
  SetThreadsFn set_threads = nullptr;
};

// OpenBLAS reads OPENBLAS_CORETYPE when it is opened: set it first. attn's own
// ATTN_BLAS_CORETYPE wins; otherwise the core follows attn's instruction set and
// replaces an OPENBLAS_CORETYPE inherited from the environment (the images of
// this project's machines set it to Haswell, on AVX-512 CPUs too).
void choose_core_type(BlasInfo& info) {
  const char* own = std::getenv("ATTN_BLAS_CORETYPE");
  const char* inherited = std::getenv("OPENBLAS_CORETYPE");
  const std::string core = own && *own ? own : blas_core_for(isa());
  info.coretype_source = own && *own ? "ATTN_BLAS_CORETYPE" : "attn";
  if (inherited && *inherited && strcasecmp(core.c_str(), inherited) != 0) info.coretype_replaced = inherited;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
}

std::vector<std::string> candidates(bool& from_env) {
  const char* env = std::getenv("ATTN_BLAS");
  from_env = env && *env;
  if (from_env) return {env};
  return {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", "libopenblaso.so.0", "libopenblas.so.0"};
}

void* open_first(std::string& path) {
  bool from_env = false;
  std::string tried;
  for (const std::string& c : candidates(from_env)) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = c;
      return h;
    }
    const char* err = dlerror();
    tried += "\n  " + c + ": " + (err ? err : "cannot open");
  }
  throw std::runtime_error(std::string("no BLAS library could be opened") +
                           (from_env ? " (ATTN_BLAS is set)" : "") + ":" + tried +
                           "\n(install Debian's libopenblas0-openmp, or set ATTN_BLAS to a CBLAS library)");
}

std::string call_string(void* h, const char* name) {
  auto fn = reinterpret_cast<StringFn>(dlsym(h, name));
  const char* s = fn ? fn() : nullptr;
  return s ? std::string(s) : std::string();
}

std::string threading_of(void* h) {
  auto fn = reinterpret_cast<IntFn>(dlsym(h, "openblas_get_parallel"));
  if (!fn) return "";
  switch (fn()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "openmp";
  }
  return "";
}

Blas load() {
  Blas b;
  choose_core_type(b.info);
  void* h = open_first(b.info.path);  // never closed: the BLAS lives as long as the process
  b.sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
  b.sgemv = reinterpret_cast<SgemvFn>(dlsym(h, "cblas_sgemv"));
  if (!b.sgemm || !b.sgemv) throw std::runtime_error("BLAS library " + b.info.path + " has no cblas_sgemm / cblas_sgemv");
  b.set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
  b.info.config = call_string(h, "openblas_get_config");
  if (b.info.config.empty()) b.info.config = "CBLAS";
  b.info.core = call_string(h, "openblas_get_corename");
  b.info.threading = threading_of(h);
  return b;
}

const Blas& blas() {
  static const Blas b = load();
  return b;
}

}  // namespace

const char* blas_core_for(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "SKYLAKEX";
    case Isa::avx2: return "HASWELL";
    case Isa::scalar: return "PRESCOTT";
  }
  return "PRESCOTT";
}

const BlasInfo& blas_info() { return blas().info; }

void blas_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  blas().sgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans, int(M), int(N), int(K), alpha, A,
               int(lda), B, int(ldb), beta, C, int(ldc));
}

void blas_sgemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* A, int64_t lda, const float* x,
                int64_t incx, float beta, float* y, int64_t incy) {
  blas().sgemv(kRowMajor, trans ? kTrans : kNoTrans, int(rows), int(cols), alpha, A, int(lda), x, int(incx), beta, y,
               int(incy));
}

void blas_set_num_threads(int n) {
  if (blas().set_threads) blas().set_threads(n);
}

}  // namespace attn::cpu
