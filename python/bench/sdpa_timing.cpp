// The C++ side of bench/python_overhead.py's fused attention figure: the call
// attn.scaled_dot_product_attention makes (attention::sdpa_fused, scale
// 1/sqrt(D)), timed in C++ on tensors of one shape, forward alone (no tape)
// and forward + backward with an upstream gradient, each the median of `reps`
// calls after one. Prints one JSON line.
//   attn_sdpa_timing B H L D THREADS REPS
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "attn/attention/attention.h"
#include "attn/autograd/node.h"
#include "attn/cpu/threading.h"
#include "attn/tensor/random.h"

namespace {

double median_ms(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s B H L D THREADS REPS\n", argv[0]);
    return 2;
  }
  const int64_t B = std::atoll(argv[1]), H = std::atoll(argv[2]), L = std::atoll(argv[3]), D = std::atoll(argv[4]);
  const int reps = std::atoi(argv[6]);
  attn::set_num_threads(std::atoi(argv[5]));
  attn::Rng rng(1);
  attn::Tensor q = attn::randn({B, H, L, D}, rng), k = attn::randn({B, H, L, D}, rng),
               v = attn::randn({B, H, L, D}, rng), g = attn::randn({B, H, L, D}, rng);
  attn::attention::FusedOptions o;
  o.scale = 1.0f / std::sqrt(float(D));
  double fwd;
  {
    attn::NoGradGuard no_tape;
    fwd = median_ms([&] { attn::attention::sdpa_fused(q, k, v, o); }, reps);
  }
  q.set_requires_grad(), k.set_requires_grad(), v.set_requires_grad();
  const double fwdbwd = median_ms(
      [&] {
        attn::backward(attn::attention::sdpa_fused(q, k, v, o), g);
        q.zero_grad(), k.zero_grad(), v.zero_grad();
      },
      reps);
  std::printf("{\"impl\": \"c++\", \"B\": %lld, \"H\": %lld, \"L\": %lld, \"D\": %lld, \"fwd_ms\": %.6f, \"fwdbwd_ms\": %.6f}\n",
              (long long)B, (long long)H, (long long)L, (long long)D, fwd, fwdbwd);
  return 0;
}
