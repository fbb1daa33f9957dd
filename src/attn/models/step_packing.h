// What every fused search step shares about its weights' layout (rnnsearch's
// and luong's search steps, models/<kind>/<kind>_search.h).
#pragma once
#include <cstdint>

namespace attn::models {

// How the products read their weights: RowMajor streams each weight once per
// product (a few rows), Packed copies them into rnn_gemm's column panels once.
enum class StepPacking { RowMajor, Packed };
constexpr int64_t kPackRows = 16;  // a model packs for searches of this many rows or more

// The folded tables are built when together they hold at most this many
// floats (256 MB; 14.3M floats for the lean model's V 8000, Hd 512, R 256).
constexpr int64_t kMaxFoldedFloats = int64_t(64) << 20;

}  // namespace attn::models
