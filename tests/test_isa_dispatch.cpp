// Run-time instruction-set dispatch (cpu/isa.h, cpu/dispatch.h): the cap, and
// every build of each dispatched kernel that this CPU can run, called directly
// by its namespace, against a plain reference on the same data. The whole
// suite also runs under each cap (ATTN_ISA=scalar|avx2|avx512 ctest, README).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/nn/rnn_kernels.h"
#include "attn/nn/rows_gemm.h"
#include "attn/tensor/random.h"
#include "compare.h"

using namespace attn;
using attn::testing::compare;

namespace {

std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (i <= cpu::detected_isa()) out.push_back(i);
  return out;
}

std::vector<float> random_vec(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = rng.normal();
  return v;
}

TEST(IsaDispatch, NamesParseAndTheCapNeverRaises) {
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    EXPECT_EQ(cpu::parse_isa(cpu::isa_name(i), "test"), i);
  try {
    cpu::parse_isa("sse9", "ATTN_ISA");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ATTN_ISA: unknown instruction set 'sse9'"), std::string::npos) << e.what();
  }
  const cpu::Isa before = cpu::isa();
  EXPECT_LE(before, cpu::detected_isa());
  cpu::set_isa_cap(cpu::Isa::scalar);
  EXPECT_EQ(cpu::isa(), cpu::Isa::scalar);
  cpu::set_isa_cap(cpu::Isa::avx512);  // a cap above the CPU gives the CPU's level
  EXPECT_EQ(cpu::isa(), cpu::detected_isa());
  cpu::set_isa_cap(before);
  EXPECT_EQ(cpu::isa(), before);
}

// ATTN_ISA, when the suite runs under a cap, is what isa() reports
TEST(IsaDispatch, EnvironmentCapIsHonoured) {
  const char* env = std::getenv("ATTN_ISA");
  if (!env) GTEST_SKIP() << "ATTN_ISA not set";
  cpu::Isa cap = cpu::parse_isa(env, "ATTN_ISA");
  EXPECT_EQ(cpu::isa(), cap < cpu::detected_isa() ? cap : cpu::detected_isa());
}

// rows_gemm::gemm_wt of every build: C = A W^T over an output window, with and
// without accumulation, rows past kMaxRows and K not a multiple of any width
TEST(IsaDispatch, RowsGemmEveryBuildMatchesTheReference) {
  Rng rng(5);
  const int64_t m = 11, K = 77, O = 45, o0 = 3, o1 = 41;
  std::vector<float> a = random_vec(m * K, rng), w = random_vec(O * K, rng), c0 = random_vec(m * O, rng);
  for (bool acc : {false, true}) {
    std::vector<float> ref = c0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t o = o0; o < o1; ++o) {
        double s = acc ? ref[size_t(i * O + o)] : 0.0;
        for (int64_t k = 0; k < K; ++k) s += double(a[size_t(i * K + k)]) * w[size_t(o * K + k)];
        ref[size_t(i * O + o)] = float(s);
      }
    for (cpu::Isa isa : runnable_isas()) {
      std::vector<float> c = c0;
      auto fn = isa == cpu::Isa::avx512 ? rows_gemm::avx512::gemm_wt
                : isa == cpu::Isa::avx2 ? rows_gemm::avx2::gemm_wt
                                        : rows_gemm::scalar::gemm_wt;
      fn(m, K, a.data(), K, w.data(), K, o0, o1, c.data(), O, acc);
      EXPECT_LE(compare(c, ref, 1e-5, 1e-5).max_abs, 2e-5) << cpu::isa_name(isa) << " accumulate=" << acc;
    }
  }
}

// rnn_kernels::gru_forward of every build (fast math) against the exact
// reference build on the same inputs
TEST(IsaDispatch, GruGatesEveryBuildMatchesTheExactKernel) {
  Rng rng(6);
  const int64_t n = 5, H = 37;
  std::vector<float> gx = random_vec(n * 3 * H, rng), gh = random_vec(n * 3 * H, rng), bi = random_vec(3 * H, rng),
                     bh = random_vec(3 * H, rng), hp = random_vec(n * H, rng);
  auto run = [&](auto fn, rnn_kernels::Math math) {
    std::vector<float> gates = gx, ghn(size_t(n * H)), y(size_t(n * H)), next(size_t(n * H));
    std::vector<float*> yr, nr;
    for (int64_t j = 0; j < n; ++j) yr.push_back(y.data() + j * H), nr.push_back(next.data() + j * H);
    rnn_kernels::GruForward f;
    f.n = n, f.hidden = H, f.k_begin = 0, f.k_end = H, f.gates = gates.data(), f.gh = gh.data(), f.b_ih = bi.data(),
    f.b_hh = bh.data(), f.h_prev = hp.data(), f.ghn = ghn.data(), f.y_rows = yr.data(), f.next_rows = nr.data();
    fn(f, math);
    return y;
  };
  std::vector<float> ref = run(rnn_kernels::scalar::gru_forward, rnn_kernels::Math::Exact);
  for (cpu::Isa isa : runnable_isas()) {
    auto fn = isa == cpu::Isa::avx512 ? rnn_kernels::avx512::gru_forward
              : isa == cpu::Isa::avx2 ? rnn_kernels::avx2::gru_forward
                                      : rnn_kernels::scalar::gru_forward;
    EXPECT_LE(compare(run(fn, rnn_kernels::Math::Fast), ref, 1e-6, 1e-6).max_abs, 1e-6) << cpu::isa_name(isa);
  }
}

}  // namespace
