#include <cblas.h>

#include "attn/bench/bench.h"
#include "attn/tensor/random.h"
#include "attn/tensor/threading.h"

namespace attn::bench {

void bench_gemm(const BenchOptions& opt) {
  set_num_threads(opt.threads);
  Rng rng(1);
  for (int n : {1024, 2048}) {
    Tensor a = randn({n, n}, rng), b = randn({n, n}, rng), c = Tensor::zeros({n, n});
    double ms = median_ms(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                      c.data(), n);
        },
        opt.repeats);
    double gflops = 2.0 * double(n) * n * n / (ms * 1e6);
    emit({{"bench", "sgemm"}, {"impl", "openblas"}, {"n", n}, {"threads", opt.threads}, {"ms", ms}, {"gflops", gflops}});
  }
}

}  // namespace attn::bench
