// `attn bench attention`: scaled dot-product attention (fused flash-style
// kernel vs the materialising path), MultiHeadAttention with projections, and
// the fused additive (Bahdanau) decoder step, each beside PyTorch on the same
// shapes in the same run (bench/peers/torch_attention.py), plus sgemm n=2048
// as the machine's ceiling.
//
// gflops = 4 B H Lq Lk D / forward time (halved for causal: only the lower
// triangle is work). peak_bytes = the tensor pool's peak during one
// forward+backward; rss_bytes = the process's peak resident set. Shapes run
// with --large (L=4096, and B=1 H=8 L=16384) each run in a forked child, so
// their rss_bytes is their own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attn/attention/additive_step.h"
#include "attn/attention/attention.h"
#include "attn/bench/bench.h"
#include "attn/nn/multihead.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/pool.h"
#include "attn/tensor/threading.h"

namespace attn::bench {

namespace {

struct Shape4 {
  int64_t B, H, L, D;
  bool causal;
};

size_t rss_peak_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

int reps_for(const Shape4& s, int repeats) {
  double work = double(s.B * s.H) * double(s.L) * double(s.L);
  return work > 1e9 ? 3 : repeats;  // the largest shapes take seconds per call
}

void bench_sdpa(const Shape4& s, bool fused, const BenchOptions& opt) {
  using namespace attention;
  Rng rng(1);
  Tensor q = randn({s.B, s.H, s.L, s.D}, rng), k = randn({s.B, s.H, s.L, s.D}, rng),
         v = randn({s.B, s.H, s.L, s.D}, rng), seed = randn({s.B, s.H, s.L, s.D}, rng);
  AttentionOptions ao;
  ao.mask.causal = s.causal;
  ao.kernel = fused ? Kernel::Fused : Kernel::Materialized;
  int reps = reps_for(s, opt.repeats);
  double fwd;
  {
    NoGradGuard ng;
    fwd = median_ms([&] { scaled_dot_product_attention(q, k, v, ao); }, reps, 1);
  }
  q.set_requires_grad(), k.set_requires_grad(), v.set_requires_grad();
  auto step = [&] {
    backward(scaled_dot_product_attention(q, k, v, ao).context, seed);
    q.zero_grad(), k.zero_grad(), v.zero_grad();
  };
  double fwdbwd = median_ms(step, reps, 1);
  pool::reset_peak();
  size_t base = pool::stats().bytes_in_use;
  step();
  size_t peak = pool::stats().peak_bytes_in_use - base;
  double flops = 4.0 * double(s.B * s.H) * double(s.L) * double(s.L) * double(s.D) * (s.causal ? 0.5 : 1.0);
  emit({{"bench", "attention"}, {"impl", fused ? "attn-fused" : "attn-naive"}, {"B", s.B}, {"H", s.H}, {"Lq", s.L},
        {"Lk", s.L}, {"D", s.D}, {"causal", s.causal}, {"threads", opt.threads}, {"fwd_ms", fwd},
        {"fwdbwd_ms", fwdbwd}, {"gflops", flops / (fwd * 1e6)}, {"peak_bytes", peak}, {"rss_bytes", rss_peak_bytes()}});
}

// MultiHeadAttention(E = H * D) self-attention with its projections, fused heads.
void bench_mha(const Shape4& s, const BenchOptions& opt) {
  Rng rng(4);
  int64_t E = s.H * s.D;
  nn::MultiHeadAttention mha(nn::MultiHeadAttentionOptions(E, s.H), rng);
  Tensor x = randn({s.B, s.L, E}, rng), seed = randn({s.B, s.L, E}, rng);
  attention::Mask mask;
  mask.causal = s.causal;
  int reps = reps_for(s, opt.repeats);
  double fwd;
  {
    NoGradGuard ng;
    fwd = median_ms([&] { mha.forward(x, x, x, mask); }, reps, 1);
  }
  x.set_requires_grad();
  double fwdbwd = median_ms(
      [&] {
        backward(mha.forward(x, x, x, mask).context, seed);
        mha.zero_grad(), x.zero_grad();
      },
      reps, 1);
  double flops = 4.0 * double(s.B * s.H) * double(s.L) * double(s.L) * double(s.D) * (s.causal ? 0.5 : 1.0);
  emit({{"bench", "attention"}, {"impl", "attn-mha"}, {"B", s.B}, {"H", s.H}, {"Lq", s.L}, {"Lk", s.L}, {"D", s.D},
        {"causal", s.causal}, {"threads", opt.threads}, {"fwd_ms", fwd}, {"fwdbwd_ms", fwdbwd},
        {"gflops", flops / (fwd * 1e6)}, {"peak_bytes", nullptr}, {"rss_bytes", rss_peak_bytes()}});
}

// The Bahdanau decoder step: query [B, q_dim] projected by W1 inside the step,
// keys [B, Lk, attn_dim] projected once (cached), values [B, Lk, v_dim].
void bench_additive_step(const BenchOptions& opt) {
  using namespace attention;
  const int64_t B = 64, Lk = 50, Qd = 1024, A = 512, Dv = 1024;
  Rng rng(2);
  Tensor query = randn({B, Qd}, rng), keys = randn({B, Lk, A}, rng), values = randn({B, Lk, Dv}, rng);
  Tensor W1 = randn({A, Qd}, rng, 0.03f), v = randn({A}, rng, 0.05f);
  Tensor lengths = Tensor::empty({B});
  for (int64_t b = 0; b < B; ++b) lengths.data()[b] = float(Lk - b % 7);
  Tensor dctx = randn({B, Dv}, rng);
  double fwd;
  {
    NoGradGuard ng;
    fwd = median_ms([&] { additive_step(query, keys, values, W1, v, lengths); }, opt.repeats);
  }
  query.set_requires_grad(), keys.set_requires_grad(), values.set_requires_grad(), W1.set_requires_grad(),
      v.set_requires_grad();
  double fb = median_ms(
      [&] {
        backward(additive_step(query, keys, values, W1, v, lengths).context, dctx);
        query.zero_grad(), keys.zero_grad(), values.zero_grad(), W1.zero_grad(), v.zero_grad();
      },
      opt.repeats);
  emit({{"bench", "additive_step"}, {"impl", "attn-fused"}, {"B", B}, {"Lk", Lk}, {"q_dim", Qd}, {"attn_dim", A},
        {"v_dim", Dv}, {"threads", opt.threads}, {"fwd_ms", fwd}, {"fwdbwd_ms", fb}});
}

// Runs f in a child process (its own peak RSS), forwarding its output.
template <class F>
void in_child(F f) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    f();
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) emit({{"bench", "attention"}, {"error", "child failed"}});
}

}  // namespace

void bench_attention(const BenchOptions& opt) {
  set_num_threads(opt.threads);
  // The long shapes first, each in a child forked before this process has
  // run any OpenMP region (libgomp's thread pool does not survive fork(): a
  // child forked later hangs) and before the materialising path has grown it
  // (~20 GB at L=2048 with --large).
  if (opt.large) {
    for (bool causal : {false, true}) in_child([&] { bench_sdpa({4, 8, 4096, 64, causal}, true, opt); });
    in_child([&] { bench_sdpa({1, 8, 16384, 64, false}, true, opt); });
  }
  {  // the ceiling, in the same run
    Rng rng(3);
    const int64_t n = 2048;
    Tensor a = randn({n, n}, rng), b = randn({n, n}, rng), c = Tensor::empty({n, n});
    double ms = median_ms(
        [&] { kernels::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); },
        opt.repeats);
    emit({{"bench", "attention"}, {"impl", "sgemm"}, {"n", n}, {"threads", opt.threads}, {"ms", ms},
          {"gflops", 2.0 * double(n) * n * n / (ms * 1e6)}});
  }
  std::vector<int64_t> lens = {32, 128, 512, 2048};
  for (int64_t L : lens)
    for (bool causal : {false, true}) {
      Shape4 s{4, 8, L, 64, causal};
      bench_sdpa(s, true, opt);
      // the materialising path at L=2048 holds B*H*L^2 floats several times
      // (~11-20 GB here): only with --large
      if (L <= 512 || opt.large) bench_sdpa(s, false, opt);
      bench_mha(s, opt);
    }
  bench_additive_step(opt);
  if (opt.run_peers) {
    std::string l;
    for (int64_t L : lens) l += (l.empty() ? "" : ",") + std::to_string(L);
    if (opt.large) l += ",4096";
    run_peer(opt, "torch_attention.py", "--lens " + l);
  }
}

}  // namespace attn::bench
