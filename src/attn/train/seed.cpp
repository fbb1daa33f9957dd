#include "attn/train/seed.h"

namespace attn::train {

uint64_t derive_seed(uint64_t run_seed, std::string_view stream) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : stream) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  uint64_t z = run_seed ^ h;  // splitmix64 finaliser
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace attn::train
