// What every fused search step shares (models/<kind>/<kind>_search.h): its
// weights' layout and when it runs threaded.
#pragma once
#include <cstdint>

#include "attn/nn/step_weight_type.h"

namespace attn::models {

// How a search's products read their weights: their element type (the search's
// compute type: fp32, int8 or bf16, nn/step_weight_types.h) and, for fp32,
// whether each weight is streamed row-major once per product (a few rows) or
// copied into rnn_gemm's column panels once (packed). int8 and bf16 weights
// are always in their own panels.
struct StepLayout {
  bool packed = false;
  nn::StepWeightType type = nn::StepWeightType::F32;
};
constexpr int64_t kPackRows = 16;  // a model packs for searches of this many rows or more

// The layout of a search of up to max_rows rows computing in `type`
inline StepLayout step_layout(int64_t max_rows, nn::StepWeightType type) { return {max_rows >= kPackRows, type}; }

// A search step runs on the OpenMP team from this many multiply-adds on (all
// its rows together; the Transformer counts its output layer's): below it one
// thread finishes before a second one would have woken up.
constexpr int64_t kParallelStepMacs = int64_t(1) << 17;

// The folded tables are built when together they hold at most this many
// floats (256 MB; 14.3M floats for the lean model's V 8000, Hd 512, R 256).
constexpr int64_t kMaxFoldedFloats = int64_t(64) << 20;

}  // namespace attn::models
