#include <unistd.h>

#include <cstdlib>
#include <map>

#include "attn/bench/bench.h"
#include "attn/cpu/blas.h"
#include "attn/cpu/isa.h"
#include "attn/cpu/threading.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/random.h"

namespace attn::bench {
namespace {

std::string self_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("bench gemm: cannot read /proc/self/exe");
  return std::string(buf, size_t(n));
}

// OpenBLAS's best kernels for this CPU, named explicitly (ATTN_BLAS_CORETYPE in the
// child): what attn must reach by itself
const char* best_core() { return cpu::blas_core_for(cpu::detected_isa()); }

}  // namespace

double sgemm_gflops(int64_t m, int64_t n, int64_t k, int repeats, double warmup_seconds) {
  Rng rng(1);
  Tensor a = randn({m, k}, rng), b = randn({k, n}, rng), c = Tensor::zeros({m, n});
  // warm-up by time, not 2 calls: a fresh process's first products run at half
  // speed for a while (measured: 89-232 GFLOP/s at n = 1024 after 2 calls or
  // 0.3 s, 360-400 after 1 s; OpenBLAS's buffers, the clock ramping up)
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const int warmup = int(warmup_seconds * 1e3 / (flops * 1e-6 / 300.0)) + 2;
  const double ms = median_ms(
      [&] { kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n); }, repeats, warmup);
  return flops / (ms * 1e6);
}

void bench_gemm(const BenchOptions& opt) {
  set_num_threads(opt.threads);
  const bool reference = std::getenv("ATTN_BENCH_GEMM_REFERENCE") != nullptr;
  nlohmann::json machine = machine_record();
  std::map<int, double> ours;
  for (int n : {1024, 2048}) {
    // warm-up of ~1 s (sgemm_gflops says why): the reference, which runs second,
    // would otherwise find the machine warm
    const double gflops = sgemm_gflops(n, n, n, opt.repeats, 1.0);
    const double ms = 2.0 * double(n) * n * n / (gflops * 1e6);
    ours[n] = gflops;
    nlohmann::json j = {{"bench", "sgemm"}, {"impl", reference ? "openblas-env" : "attn"}, {"n", n},
                        {"threads", opt.threads}, {"ms", ms}, {"gflops", gflops}};
    j.update(machine);
    emit(j);
  }
  if (reference || !opt.run_peers) return;
  std::string cmd = std::string("ATTN_BENCH_GEMM_REFERENCE=1 ATTN_BLAS_CORETYPE=") + best_core() + " " + shell_quote(self_path()) +
                    " bench gemm --no-peers --threads " + std::to_string(opt.threads) + " --repeats " +
                    std::to_string(opt.repeats);
  for (const auto& j : run_lines(cmd, "openblas-env"))
    if (j.value("bench", "") == "sgemm" && j.contains("gflops")) {
      int n = j["n"];
      emit({{"bench", "sgemm_vs_best_core"}, {"n", n}, {"core", best_core()}, {"ratio", ours[n] / double(j["gflops"])}});
    }
}

}  // namespace attn::bench
