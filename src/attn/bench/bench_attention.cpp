// `attn bench attention`: scaled dot-product attention (fused flash-style
// kernel vs the materialising path), MultiHeadAttention with projections, and
// the fused additive (Bahdanau) decoder step, each beside PyTorch on the same
// shapes in the same run (bench/peers/torch_attention.py), plus sgemm n=2048
// as the machine's ceiling.
//
// Ours and the peer alternate shape by shape (a peer process per shape), so a
// change in the machine's speed during the run (other tenants, memory
// bandwidth) lands on both sides of a ratio rather than on one; each shape then
// gets an "attention_ratio" line: the peer's fwd+bwd time over ours.
//
// gflops = 4 B H Lq Lk D / forward time (halved for causal: only the lower
// triangle is work). peak_bytes = the tensor pool's peak during one
// forward+backward (for attn-mha: projections, activations and gradients
// included); rss_bytes = the process's peak resident set. Shapes run with
// --large (L=4096, and B=1 H=8 L=16384) each run in a forked child, so their
// rss_bytes is their own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attn/attention/additive_step.h"
#include "attn/attention/attention.h"
#include "attn/bench/bench.h"
#include "attn/cpu/threading.h"
#include "attn/nn/multihead.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/pool.h"

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

// Timed calls per figure (the peer script uses the same rule): the largest
// shapes take seconds per call; the short ones (L <= 128, the additive step)
// take a few ms or less, where 10 calls leave the median at the mercy of one
// disturbance on this shared machine.
// The tensor pool's peak above what was in use before, over one call of step.
size_t pool_peak_of(const std::function<void()>& step) {
  pool::reset_peak();
  size_t base = pool::stats().bytes_in_use;
  step();
  return pool::stats().peak_bytes_in_use - base;
}

int reps_for(const Shape4& s, int repeats) {
  double work = double(s.B * s.H) * double(s.L) * double(s.L);
  return work > 1e9 ? 3 : s.L <= 128 ? 10 * repeats : repeats;
}

nlohmann::json bench_sdpa(const Shape4& s, bool fused, const BenchOptions& opt) {
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
  size_t peak = pool_peak_of(step);
  double flops = 4.0 * double(s.B * s.H) * double(s.L) * double(s.L) * double(s.D) * (s.causal ? 0.5 : 1.0);
  nlohmann::json j = {{"bench", "attention"}, {"impl", fused ? "attn-fused" : "attn-naive"}, {"B", s.B}, {"H", s.H},
                      {"Lq", s.L}, {"Lk", s.L}, {"D", s.D}, {"causal", s.causal}, {"threads", opt.threads},
                      {"fwd_ms", fwd}, {"fwdbwd_ms", fwdbwd}, {"gflops", flops / (fwd * 1e6)}, {"peak_bytes", peak},
                      {"rss_bytes", rss_peak_bytes()}};
  emit(j);
  return j;
}

// MultiHeadAttention(E = H * D) self-attention with its projections, fused heads.
nlohmann::json bench_mha(const Shape4& s, const BenchOptions& opt) {
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
  auto step = [&] {
    backward(mha.forward(x, x, x, mask).context, seed);
    mha.zero_grad(), x.zero_grad();
  };
  double fwdbwd = median_ms(step, reps, 1);
  size_t peak = pool_peak_of(step);
  double flops = 4.0 * double(s.B * s.H) * double(s.L) * double(s.L) * double(s.D) * (s.causal ? 0.5 : 1.0);
  nlohmann::json j = {{"bench", "attention"}, {"impl", "attn-mha"}, {"B", s.B}, {"H", s.H}, {"Lq", s.L}, {"Lk", s.L},
                      {"D", s.D}, {"causal", s.causal}, {"threads", opt.threads}, {"fwd_ms", fwd},
                      {"fwdbwd_ms", fwdbwd}, {"gflops", flops / (fwd * 1e6)}, {"peak_bytes", peak},
                      {"rss_bytes", rss_peak_bytes()}};
  emit(j);
  return j;
}

// The Bahdanau decoder step: query [B, q_dim] projected by W1 inside the step,
// keys [B, Lk, attn_dim] projected once (cached), values [B, Lk, v_dim].
nlohmann::json bench_additive_step(const BenchOptions& opt) {
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
    fwd = median_ms([&] { additive_step(query, keys, values, W1, v, lengths); }, 10 * opt.repeats);
  }
  query.set_requires_grad(), keys.set_requires_grad(), values.set_requires_grad(), W1.set_requires_grad(),
      v.set_requires_grad();
  double fb = median_ms(
      [&] {
        backward(additive_step(query, keys, values, W1, v, lengths).context, dctx);
        query.zero_grad(), keys.zero_grad(), values.zero_grad(), W1.zero_grad(), v.zero_grad();
      },
      10 * opt.repeats);
  nlohmann::json j = {{"bench", "additive_step"}, {"impl", "attn-fused"}, {"B", B}, {"Lk", Lk}, {"q_dim", Qd},
                      {"attn_dim", A}, {"v_dim", Dv}, {"threads", opt.threads}, {"fwd_ms", fwd}, {"fwdbwd_ms", fb}};
  emit(j);
  return j;
}

// The peer's line with this impl (and shape, for attention lines), or null.
nlohmann::json find_line(const std::vector<nlohmann::json>& lines, const std::string& impl, const nlohmann::json& ours) {
  for (const auto& l : lines) {
    if (l.value("impl", "") != impl) continue;
    if (ours.contains("Lq") && (l.value("Lq", -1) != ours["Lq"].get<int>() || l.value("causal", false) != ours["causal"].get<bool>()))
      continue;
    return l;
  }
  return nullptr;
}

double ratio(const nlohmann::json& peer, const nlohmann::json& ours, const char* key) {
  if (peer.is_null() || !peer.contains(key) || !ours.contains(key) || ours[key].get<double>() <= 0.0) return 0.0;
  return peer[key].get<double>() / ours[key].get<double>();
}

// Runs the peer on one attention shape right after ours and prints the ratios.
void peer_shape(const BenchOptions& opt, const Shape4& s, const nlohmann::json& fused, const nlohmann::json& mha) {
  if (!opt.run_peers) return;
  auto lines = run_peer(opt, "torch_attention.py",
                        "--lens " + std::to_string(s.L) + " --causal " + (s.causal ? "yes" : "no") + " --additive 0");
  nlohmann::json j = {{"bench", "attention_ratio"}, {"Lq", s.L}, {"causal", s.causal}, {"threads", opt.threads}};
  if (!fused.is_null()) j["fused_vs_torch_fwdbwd"] = ratio(find_line(lines, "torch-manual", fused), fused, "fwdbwd_ms");
  if (!mha.is_null()) j["mha_vs_torch_fwdbwd"] = ratio(find_line(lines, "torch-mha", mha), mha, "fwdbwd_ms");
  emit(j);
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
  // (~20 GB at L=2048 with --large). Their peer runs after them (L = 4096 only:
  // PyTorch's manual path cannot hold L = 16384).
  if (opt.large) {
    for (bool causal : {false, true}) in_child([&] { bench_sdpa({4, 8, 4096, 64, causal}, true, opt); });
    in_child([&] { bench_sdpa({1, 8, 16384, 64, false}, true, opt); });
    if (opt.run_peers) run_peer(opt, "torch_attention.py", "--lens 4096 --additive 0");
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
  for (int64_t L : {32, 128, 512, 2048})
    for (bool causal : {false, true}) {
      Shape4 s{4, 8, L, 64, causal};
      nlohmann::json fused = bench_sdpa(s, true, opt);
      // the materialising path at L=2048 holds B*H*L^2 floats several times
      // (~11-20 GB here): only with --large
      if (L <= 512 || opt.large) bench_sdpa(s, false, opt);
      nlohmann::json mha = bench_mha(s, opt);
      peer_shape(opt, s, fused, mha);
    }
  nlohmann::json add = bench_additive_step(opt);
  if (opt.run_peers) {
    auto lines = run_peer(opt, "torch_attention.py", "--lens '' --additive 1");
    emit({{"bench", "additive_step_ratio"}, {"threads", opt.threads},
          {"attn_vs_torch_cached_fwd", ratio(find_line(lines, "torch-cached", add), add, "fwd_ms")}});
  }
}

}  // namespace attn::bench
