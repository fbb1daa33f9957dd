// One threading policy for the whole engine.
//
// OpenBLAS is linked in its OpenMP build, so BLAS calls and our own kernels
// (OpenMP loops) run on the same libgomp thread pool: no second pool spins
// while the first works, which on 2 cores costs 2-3x (see PEERS.md). Our
// kernels only go parallel above a size threshold (kParallelGrain elements),
// because waking a team for a small loop costs more than the loop.
// A BLAS call made inside one of our parallel regions runs single-threaded
// (OpenBLAS checks omp_in_parallel), so batched small GEMMs parallelise over
// the batch instead.
#pragma once
#include <cstdint>

namespace attn {

constexpr int64_t kParallelGrain = 1 << 15;

// Sets the thread count for OpenMP and OpenBLAS together (n <= 0: all cores).
void set_num_threads(int n);
int num_threads();

}  // namespace attn
