// Deterministic random numbers: same seed => same numbers on every machine
// and thread count (all draws happen on the calling thread, in order).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn {

// xoshiro256** seeded by splitmix64: small state (saved in checkpoints), fast.
class Rng {
public:
  explicit Rng(uint64_t seed = 0x5eed) { seed_(seed); }
  void seed_(uint64_t seed);
  uint64_t next_u64();
  float uniform();                      // [0, 1)
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  float normal();                       // N(0, 1), Box-Muller
  uint64_t below(uint64_t n) { return next_u64() % n; }

  // state for checkpoints: 4 words
  std::string state() const;
  void set_state(const std::string& s);  // throws on a malformed state string

private:
  uint64_t s_[4];
};

// Fisher-Yates shuffle of v in place: the same order for the same Rng state on
// every machine (one draw per element, last to first).
template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

Tensor randn(const Shape& shape, Rng& rng, float stddev = 1.0f);
Tensor rand_uniform(const Shape& shape, Rng& rng, float lo, float hi);

}  // namespace attn
