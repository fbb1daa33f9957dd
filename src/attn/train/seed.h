// Deterministic seeding: one run seed, many independent named streams.
//
// A training run draws random numbers for several jobs (weight init, dropout,
// data shuffling). Giving each job its own Rng, seeded from (run seed, stream
// name), keeps each job's numbers fixed when another job draws more or fewer
// (adding a dropout layer does not reshuffle the data). Rng draws happen on the
// calling thread in order, so streams do not depend on the thread count;
// reductions inside kernels may, so bit-identical reruns also need the same
// attn::set_num_threads().
#pragma once
#include <cstdint>
#include <string_view>

#include "attn/tensor/random.h"

namespace attn::train {

// splitmix64(run_seed ^ FNV-1a(stream)): fixed across machines and releases.
uint64_t derive_seed(uint64_t run_seed, std::string_view stream);

// An Rng for `stream` ("init", "dropout", "data", ...) of the run `run_seed`.
inline Rng make_rng(uint64_t run_seed, std::string_view stream) { return Rng(derive_seed(run_seed, stream)); }

}  // namespace attn::train
