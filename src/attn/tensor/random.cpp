#include "attn/tensor/random.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace attn {

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void Rng::seed_(uint64_t seed) {
  uint64_t z = seed;
  for (auto& w : s_) {
    z += 0x9e3779b97f4a7c15ULL;
    uint64_t x = z;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    w = x ^ (x >> 31);
  }
}

uint64_t Rng::next_u64() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float Rng::uniform() { return float(next_u64() >> 40) * (1.0f / 16777216.0f); }

float Rng::normal() {
  float u1 = uniform(), u2 = uniform();
  if (u1 < 1e-12f) u1 = 1e-12f;
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.283185307179586f * u2);
}

std::string Rng::state() const {
  std::ostringstream os;
  os << s_[0] << ' ' << s_[1] << ' ' << s_[2] << ' ' << s_[3];
  return os.str();
}

void Rng::set_state(const std::string& s) {
  std::istringstream is(s);
  uint64_t w[4];
  for (auto& x : w)
    if (!(is >> x)) throw std::invalid_argument("Rng::set_state: malformed state '" + s + "'");
  for (int i = 0; i < 4; ++i) s_[i] = w[i];
}

Tensor randn(const Shape& shape, Rng& rng, float stddev) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = stddev * rng.normal();
  return t;
}

Tensor rand_uniform(const Shape& shape, Rng& rng, float lo, float hi) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng.uniform(lo, hi);
  return t;
}

}  // namespace attn
