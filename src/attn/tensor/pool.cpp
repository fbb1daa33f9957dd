#include "attn/tensor/pool.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace attn::pool {
namespace {

// Size classes: exact multiples of 64 bytes below 4 KiB, then 8 classes per
// power of two (at most 12.5% waste), so buffers of slowly varying size (batches
// of different lengths) still find a cached block.
size_t size_class(size_t bytes) {
  if (bytes <= 4096) return (bytes + 63) & ~size_t(63);
  size_t p = size_t(1) << (63 - __builtin_clzll(bytes));
  size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

struct State {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_lists;
  Stats stats;
};
State& state() {
  static State* s = new State();  // never destroyed: tensors may outlive static destruction order
  return *s;
}

}  // namespace

void* allocate(size_t bytes) {
  if (bytes == 0) bytes = 64;
  size_t cls = size_class(bytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.free_lists.find(cls);
    if (it != s.free_lists.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      s.stats.bytes_cached -= cls;
      s.stats.bytes_in_use += cls;
      if (s.stats.bytes_in_use > s.stats.peak_bytes_in_use) s.stats.peak_bytes_in_use = s.stats.bytes_in_use;
      ++s.stats.pool_hits;
      return p;
    }
    s.stats.bytes_in_use += cls;
    if (s.stats.bytes_in_use > s.stats.peak_bytes_in_use) s.stats.peak_bytes_in_use = s.stats.bytes_in_use;
    ++s.stats.system_allocs;
  }
  void* p = std::aligned_alloc(64, cls);
  if (!p) throw std::bad_alloc();
  return p;
}

void release(void* p, size_t bytes) {
  if (!p) return;
  if (bytes == 0) bytes = 64;
  size_t cls = size_class(bytes);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.free_lists[cls].push_back(p);
  s.stats.bytes_in_use -= cls;
  s.stats.bytes_cached += cls;
}

void trim() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [cls, list] : s.free_lists)
    for (void* p : list) std::free(p);
  s.free_lists.clear();
  s.stats.bytes_cached = 0;
}

Stats stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.stats;
}

void reset_peak() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.peak_bytes_in_use = s.stats.bytes_in_use;
}

}  // namespace attn::pool
