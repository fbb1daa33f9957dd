#include "attn/tensor/pool.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <sys/mman.h>
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

// The cache never holds more than max(kMinCacheLimit, peak bytes in use): a
// block of one size class cannot serve another, so with batches of many
// shapes an unbounded cache grows by a step's worth of memory per new shape
// (a Luong model on Multi30k reached 24 GB in 8 minutes). Over the limit, the
// classes used least recently are freed first; a run of one shape keeps all
// of its blocks (its cache never exceeds its peak).
constexpr size_t kMinCacheLimit = size_t(256) << 20;
constexpr size_t kHugePage = size_t(2) << 20;

struct FreeList {
  std::vector<void*> blocks;
  uint64_t last_used = 0;  // State::tick when a block of this class was last handed out or returned
};

struct State {
  std::mutex mu;
  std::unordered_map<size_t, FreeList> free_lists;
  uint64_t tick = 0;
  Stats stats;
};
State& state() {
  static State* s = new State();  // never destroyed: tensors may outlive static destruction order
  return *s;
}

// Frees cached blocks, least recently used classes first, until `incoming`
// more bytes fit under the limit. Called with s.mu held.
void evict_for(State& s, size_t incoming) {
  const size_t limit = std::max(kMinCacheLimit, s.stats.peak_bytes_in_use);
  if (s.stats.bytes_cached + incoming <= limit) return;
  std::vector<std::pair<uint64_t, size_t>> order;  // (last_used, class)
  for (auto& [cls, fl] : s.free_lists)
    if (!fl.blocks.empty()) order.emplace_back(fl.last_used, cls);
  std::sort(order.begin(), order.end());
  for (auto& [used, cls] : order) {
    auto& blocks = s.free_lists[cls].blocks;
    while (!blocks.empty() && s.stats.bytes_cached + incoming > limit) {
      std::free(blocks.back());
      blocks.pop_back();
      s.stats.bytes_cached -= cls;
      ++s.stats.evictions;
    }
    if (s.stats.bytes_cached + incoming <= limit) return;
  }
}

}  // namespace

void* allocate(size_t bytes) {
  if (bytes == 0) bytes = 64;
  size_t cls = size_class(bytes);
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    FreeList& fl = s.free_lists[cls];
    fl.last_used = ++s.tick;
    s.stats.bytes_in_use += cls;
    if (s.stats.bytes_in_use > s.stats.peak_bytes_in_use) s.stats.peak_bytes_in_use = s.stats.bytes_in_use;
    if (!fl.blocks.empty()) {
      void* p = fl.blocks.back();
      fl.blocks.pop_back();
      s.stats.bytes_cached -= cls;
      ++s.stats.pool_hits;
      return p;
    }
    ++s.stats.system_allocs;
    evict_for(s, 0);  // a new block raises the footprint: shed stale classes first
  }
  // Blocks of 2 MiB and more start on a 2 MiB boundary and ask for transparent
  // huge pages (the kernel's THP mode here is "madvise"): one TLB entry then
  // covers 512 pages of a packed weight or an activation, and the first touch
  // faults once per 2 MiB instead of once per 4 KiB.
  const bool huge = cls >= kHugePage;
  void* p = std::aligned_alloc(huge ? kHugePage : 64, huge ? (cls + kHugePage - 1) / kHugePage * kHugePage : cls);
  if (!p) throw std::bad_alloc();
  if (huge) ::madvise(p, cls, MADV_HUGEPAGE);  // advice only: without THP it changes nothing
  return p;
}

void release(void* p, size_t bytes) {
  if (!p) return;
  if (bytes == 0) bytes = 64;
  size_t cls = size_class(bytes);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.bytes_in_use -= cls;
  evict_for(s, cls);
  FreeList& fl = s.free_lists[cls];
  fl.last_used = ++s.tick;
  fl.blocks.push_back(p);
  s.stats.bytes_cached += cls;
}

void trim() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [cls, fl] : s.free_lists)
    for (void* p : fl.blocks) std::free(p);
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
