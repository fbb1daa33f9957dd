// attn_bench_attention: times scaled dot-product attention, fused kernel vs the
// materialising path, forward and forward+backward, and prints one JSON line
// per (impl, shape):
//   {"bench":"attention","impl":"attn-fused"|"attn-naive","B","H","Lq","Lk","D",
//    "causal","threads","fwd_ms","fwdbwd_ms","gflops","peak_bytes","rss_bytes"}
// gflops = 4 B H Lq Lk D / fwd time (halved for causal: only the lower triangle
// is computed); peak_bytes = the tensor pool's peak during one fwd+bwd;
// rss_bytes = the process's peak resident set so far (ru_maxrss).
// Also times the fused additive (Bahdanau) decoder step ("bench":"additive_step")
// and, first, OpenBLAS sgemm n = 2048 ("bench":"sgemm"), the GFLOP/s reference.
//
// The functions above main() are meant to move into `attn bench` unchanged.
//
// usage: attn_bench_attention [--threads N] [--quick] [--large] [--impl fused|naive|both] [--additive]
//                             [--lens 32,128] [--shape B,H,L[,causal]] [--reps N] [--only-additive]
//   default: B=4 H=8 D=64, L in {32, 128, 512, 2048}, causal and not (naive up to 2048);
//   --large adds L=4096 (fused only) and B=1 H=8 L=16384 (fused only);
//   --quick: fewer repetitions.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attn/attention/additive_step.h"
#include "attn/attention/attention.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/pool.h"
#include "attn/tensor/threading.h"

namespace attn::bench {

struct AttentionShape {
  int64_t B, H, Lq, Lk, D;
  bool causal;
};

struct AttentionTiming {
  double fwd_ms = 0, fwdbwd_ms = 0, gflops = 0;
  size_t peak_bytes = 0, rss_bytes = 0;
};

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median of `reps` timed calls after one warm-up call.
template <class F>
double median_ms(int reps, F&& f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    double t0 = now_ms();
    f();
    t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

inline size_t rss_peak_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

// One shape, one implementation (fused = the flash kernel, else materialising).
inline AttentionTiming time_attention(const AttentionShape& s, bool fused, int reps) {
  using namespace attention;
  Rng rng(1);
  Tensor q = randn({s.B, s.H, s.Lq, s.D}, rng), k = randn({s.B, s.H, s.Lk, s.D}, rng),
         v = randn({s.B, s.H, s.Lk, s.D}, rng), seed = randn({s.B, s.H, s.Lq, s.D}, rng);
  AttentionOptions opt;
  opt.mask.causal = s.causal;
  opt.kernel = fused ? Kernel::Fused : Kernel::Materialized;
  AttentionTiming t;
  {
    NoGradGuard ng;
    t.fwd_ms = median_ms(reps, [&] { scaled_dot_product_attention(q, k, v, opt); });
  }
  q.set_requires_grad(), k.set_requires_grad(), v.set_requires_grad();
  auto step = [&] {
    Tensor out = scaled_dot_product_attention(q, k, v, opt).context;
    backward(out, seed);
    q.zero_grad(), k.zero_grad(), v.zero_grad();
  };
  t.fwdbwd_ms = median_ms(reps, step);
  pool::reset_peak();
  size_t base = pool::stats().bytes_in_use;
  step();
  t.peak_bytes = pool::stats().peak_bytes_in_use - base;
  t.rss_bytes = rss_peak_bytes();
  double flops = 4.0 * double(s.B * s.H * s.Lq * s.Lk * s.D) * (s.causal ? 0.5 : 1.0);
  t.gflops = flops / (t.fwd_ms * 1e6);
  return t;
}

inline void print_attention(const AttentionShape& s, bool fused, const AttentionTiming& t) {
  std::printf(
      "{\"bench\":\"attention\",\"impl\":\"%s\",\"B\":%lld,\"H\":%lld,\"Lq\":%lld,\"Lk\":%lld,\"D\":%lld,"
      "\"causal\":%s,\"threads\":%d,\"fwd_ms\":%.3f,\"fwdbwd_ms\":%.3f,\"gflops\":%.1f,\"peak_bytes\":%zu,"
      "\"rss_bytes\":%zu}\n",
      fused ? "attn-fused" : "attn-naive", (long long)s.B, (long long)s.H, (long long)s.Lq, (long long)s.Lk,
      (long long)s.D, s.causal ? "true" : "false", num_threads(), t.fwd_ms, t.fwdbwd_ms, t.gflops, t.peak_bytes,
      t.rss_bytes);
  std::fflush(stdout);
}

// The Bahdanau decoder step with cached key projection: batch, k_len, q_dim ->
// attn_dim, v_dim. Forward (query projection included) and forward+backward.
inline void bench_additive_step(int64_t B, int64_t Lk, int64_t Qd, int64_t A, int64_t Dv, int reps) {
  using namespace attention;
  Rng rng(2);
  Tensor query = randn({B, Qd}, rng), keys = randn({B, Lk, A}, rng), values = randn({B, Lk, Dv}, rng);
  Tensor W1 = randn({A, Qd}, rng, 0.03f), v = randn({A}, rng, 0.05f);
  Tensor lengths = Tensor::empty({B});
  for (int64_t b = 0; b < B; ++b) lengths.data()[b] = float(Lk - b % 7);
  Tensor dctx = randn({B, Dv}, rng);
  double fwd;
  {
    NoGradGuard ng;
    fwd = median_ms(reps, [&] { additive_step(query, keys, values, W1, v, lengths); });
  }
  query.set_requires_grad(), keys.set_requires_grad(), values.set_requires_grad(), W1.set_requires_grad(),
      v.set_requires_grad();
  double fb = median_ms(reps, [&] {
    AdditiveStepOutput o = additive_step(query, keys, values, W1, v, lengths);
    backward(o.context, dctx);
    query.zero_grad(), keys.zero_grad(), values.zero_grad(), W1.zero_grad(), v.zero_grad();
  });
  std::printf(
      "{\"bench\":\"additive_step\",\"impl\":\"attn-fused\",\"B\":%lld,\"Lk\":%lld,\"q_dim\":%lld,\"attn_dim\":%lld,"
      "\"v_dim\":%lld,\"threads\":%d,\"fwd_ms\":%.3f,\"fwdbwd_ms\":%.3f}\n",
      (long long)B, (long long)Lk, (long long)Qd, (long long)A, (long long)Dv, num_threads(), fwd, fb);
  std::fflush(stdout);
}

// OpenBLAS sgemm n x n x n in the same run: the reference for the fused
// kernel's GFLOP/s (the issue asks for >= 75% of it at L >= 2048).
inline void bench_sgemm(int64_t n, int reps) {
  Rng rng(3);
  Tensor a = randn({n, n}, rng), b = randn({n, n}, rng), c = Tensor::empty({n, n});
  double ms = median_ms(reps, [&] {
    kernels::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  std::printf("{\"bench\":\"sgemm\",\"impl\":\"openblas\",\"n\":%lld,\"threads\":%d,\"ms\":%.3f,\"gflops\":%.1f}\n",
              (long long)n, num_threads(), ms, 2.0 * double(n) * double(n) * double(n) / (ms * 1e6));
  std::fflush(stdout);
}

}  // namespace attn::bench

int main(int argc, char** argv) {
  using namespace attn::bench;
  int threads = 2;
  bool quick = false, large = false, additive = false, only_additive = false;
  std::string impl = "both";
  std::vector<int64_t> lens = {32, 128, 512, 2048};
  std::vector<AttentionShape> custom;
  int reps_override = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--quick") quick = true;
    else if (a == "--large") large = true;
    else if (a == "--additive") additive = true;
    else if (a == "--only-additive") additive = only_additive = true;
    else if (a == "--impl" && i + 1 < argc) impl = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps_override = std::atoi(argv[++i]);
    else if (a == "--shape" && i + 1 < argc) {  // B,H,L[,causal]
      long long B = 0, H = 0, L = 0;
      int causal = 0;
      if (std::sscanf(argv[++i], "%lld,%lld,%lld,%d", &B, &H, &L, &causal) < 3) {
        std::fprintf(stderr, "--shape expects B,H,L[,causal]\n");
        return 2;
      }
      custom.push_back({B, H, L, L, 64, causal != 0});
    }
    else if (a == "--lens" && i + 1 < argc) {
      lens.clear();
      for (char* t = std::strtok(argv[++i], ","); t; t = std::strtok(nullptr, ",")) lens.push_back(std::atoll(t));
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--quick] [--large] [--additive|--only-additive] "
                           "[--impl fused|naive|both] [--lens 32,128,...] [--shape B,H,L[,causal]] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  attn::set_num_threads(threads);
  if (!only_additive) {
    bench_sgemm(2048, quick ? 3 : 7);
    std::vector<AttentionShape> shapes = custom;
    for (int64_t L : custom.empty() ? lens : std::vector<int64_t>{})
      for (bool c : {false, true}) shapes.push_back({4, 8, L, L, 64, c});
    if (large) {
      shapes.push_back({4, 8, 4096, 4096, 64, false});
      shapes.push_back({4, 8, 4096, 4096, 64, true});
      shapes.push_back({1, 8, 16384, 16384, 64, false});
    }
    for (const AttentionShape& s : shapes) {
      const double work = double(s.B * s.H * s.Lq * s.Lk);
      const int reps = reps_override > 0 ? reps_override : quick ? 3 : (work > 1e8 ? 3 : work > 1e7 ? 5 : 11);
      if (impl != "naive") print_attention(s, true, time_attention(s, true, reps));
      // the materialising path stores B H L^2 floats several times over: not past 2048
      if (impl != "fused" && s.Lq <= 2048) print_attention(s, false, time_attention(s, false, reps));
    }
  }
  if (additive) bench_additive_step(64, 50, 1024, 512, 1024, quick ? 5 : 21);
  return 0;
}
