// A caching allocator for tensor storage.
//
// Why: on these machines the first write to a fresh 4 KiB page costs ~3 us, and
// glibc returns large blocks to the kernel on free, so a training step that
// mallocs every intermediate re-faults all of them. Freed blocks are kept in
// per-size free lists (sizes rounded up to a size class) and handed out again,
// so from the second step on a training step touches only warm memory.
// The cache is bounded (max(256 MiB, peak bytes in use); least recently used
// size classes are freed first), so a long run over many batch shapes keeps
// at most about twice its peak working set.
#pragma once
#include <cstddef>

namespace attn::pool {

// Returns 64-byte-aligned storage for at least `bytes` bytes (contents undefined).
void* allocate(size_t bytes);
// Returns a block from allocate() to its free list (not to the system).
void release(void* p, size_t bytes);
// Frees every cached block back to the system (e.g. between unrelated jobs).
void trim();

struct Stats {
  size_t bytes_in_use = 0;     // handed out and not yet released
  size_t bytes_cached = 0;     // held in free lists
  size_t peak_bytes_in_use = 0;
  size_t system_allocs = 0;    // calls that went to the system allocator
  size_t pool_hits = 0;        // calls served from a free list
  size_t evictions = 0;        // cached blocks freed to keep the cache under its limit
};
Stats stats();
void reset_peak();

}  // namespace attn::pool
