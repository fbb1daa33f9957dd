// The logits and top-k phases of the fused search steps (see the header).
#include "attn/models/step_logits.h"

#include <omp.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "attn/kernels/rnnsearch_rows.h"

namespace attn::models::detail {
namespace {

// Logits are reduced (max, sum of exp, top-k candidates) per tile of this many
// 32-column units: wide enough to amortise the horizontal reductions, small
// enough (12 rows x 128 floats) for L1.
constexpr int64_t kTileUnits = 4;

}  // namespace

void check_step_rows(const char* who, const std::vector<int64_t>& rows, const std::vector<int>& prev, int64_t k,
                     int64_t B, int64_t V) {
  const std::string what = std::string(who) + " decoder step: ";
  if (k < 1 || k > V) throw std::invalid_argument(what + "k " + std::to_string(k) + " outside [1, V]");
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= B)
      throw std::invalid_argument(what + "row of sentence " + std::to_string(rows[i]) + " outside [0, " +
                                  std::to_string(B) + ")");
    if (prev[i] < 0 || prev[i] >= V)
      throw std::invalid_argument(what + "token " + std::to_string(prev[i]) + " outside [0, " + std::to_string(V) +
                                  ")");
  }
}

const std::string& check_one_attention_map(const char* who, const std::string& map) {
  if (!map.empty() && map != kAttentionMap)
    throw std::invalid_argument(std::string(who) + " decoder: unknown attention map \"" + map +
                                "\" (the model's maps: " + kAttentionMap + ")");
  return map;
}

StepLogits::StepLogits(const nn::StepLinear* w, const float* b, Tensor source) : w_(w), b_(b), source_(std::move(source)) {
  if (!source_.defined() || source_.dim() != 2 || source_.size(0) != w->out() || source_.size(1) != w->in())
    throw std::invalid_argument("StepLogits: the source weight is not [V, R] of the prepared one");
  restrict({});
}

void StepLogits::restrict(const std::vector<int>& tokens) {
  const int64_t V = w_->out(), R = w_->in();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= V || (i > 0 && tokens[i] <= tokens[i - 1]))
      throw std::invalid_argument("vocabulary shortlist: token " + std::to_string(tokens[i]) + " at " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(V) +
                                  ") or not above the one before");
  ids_ = tokens;
  sub_b_.clear();
  if (!ids_.empty()) {
    const int64_t n = int64_t(ids_.size());
    sub_rows_ = Tensor::empty({n, R});
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(source_.data() + int64_t(ids_[size_t(i)]) * R, R, sub_rows_.data() + i * R);
    sub_w_ = nn::StepLinear(sub_rows_, w_->packed(), w_->type());
    if (b_)
      for (int id : ids_) sub_b_.push_back(b_[id]);
  }
  const nn::StepLinear& y = weight();
  tiles_ = (y.units() + kTileUnits - 1) / kTileUnits;
  V_ = y.out();
}

void StepLogits::begin(int64_t N, int64_t k, int64_t threads, StepTop& out) {
  if (k > V_)
    throw std::invalid_argument("decoder step: k " + std::to_string(k) + " is more than the " + std::to_string(V_) +
                                " tokens of the vocabulary shortlist");
  N_ = N, k_ = k;
  part_max_.resize(size_t(N * tiles_));
  part_sum_.resize(size_t(N * tiles_));
  top_tok_.resize(size_t(threads * N * k));
  top_val_.resize(size_t(threads * N * k));
  top_n_.resize(size_t(threads * N));
  merge_tok_.resize(size_t(threads * threads * k));
  merge_val_.resize(size_t(threads * threads * k));
  merge_ord_.resize(size_t(threads * threads * k));
  out.k = k;
  out.tokens.resize(size_t(N * k));
  out.log_probs.resize(size_t(N * k));
}

// logits = x W^T + b, tile by tile (rows x 128 logits, in L1): each tile's max and
// sum exp(logit - max), and this thread's running k best logits of each row.
void StepLogits::tiles(const float* x, int64_t ldx, int thread) {
  constexpr int64_t kTileRows = 12, kTileCols = kTileUnits * nn::StepLinear::kUnit;
  const nn::StepLinear& y = weight();
  const float* b = bias();
  const int64_t N = N_, k = k_, V = V_, U = y.units(), T = tiles_;
  alignas(64) float tile[kTileRows * kTileCols];
  int* ttok = top_tok_.data() + int64_t(thread) * N * k;
  float* tval = top_val_.data() + int64_t(thread) * N * k;
  int64_t* tn = top_n_.data() + int64_t(thread) * N;
  std::fill(tn, tn + N, int64_t(0));
  const nn::StepRows xr = nn::shared_rows(in_, y.type(), N, y.in(), x, ldx);
  // a thread's tiles arrive in increasing order, so its lists see tokens in increasing order
#pragma omp for schedule(dynamic, 1)
  for (int64_t g = 0; g < T; ++g) {
    const int64_t u0 = g * kTileUnits, u1 = std::min(U, u0 + kTileUnits);
    const int64_t o0 = u0 * nn::StepLinear::kUnit, cols = std::min(V, u1 * nn::StepLinear::kUnit) - o0;
    for (int64_t i0 = 0; i0 < N; i0 += kTileRows) {
      const int64_t m = std::min(kTileRows, N - i0);
      for (int64_t u = u0; u < u1; ++u)
        y.apply_unit(xr.rows(i0, m), u, tile + (u - u0) * nn::StepLinear::kUnit, kTileCols);
      rnnsearch_kernels::LogitsTile lt;
      lt.x = tile, lt.ld = kTileCols, lt.m = m, lt.cols = cols, lt.first_token = int(o0);
      lt.bias = b ? b + o0 : nullptr;
      lt.tile_max = part_max_.data() + i0 * T + g, lt.tile_sum = part_sum_.data() + i0 * T + g, lt.stats_ld = T;
      lt.tokens = ttok + i0 * k, lt.values = tval + i0 * k, lt.n = tn + i0, lt.k = k;
      rnnsearch_kernels::logits_tile(lt);
    }
  }
}

// each row: lse from its tiles (in tile order); the k best of the threads' lists,
// merged by (logit descending, token ascending): the exact top k whichever thread saw
// which tile; log p = logit - lse
void StepLogits::merge(int thread, int threads, StepTop& out) {
  const int64_t N = N_, k = k_, T = tiles_;
  int* mtok = merge_tok_.data() + int64_t(thread) * threads * k;
  float* mval = merge_val_.data() + int64_t(thread) * threads * k;
  int64_t* order = merge_ord_.data() + int64_t(thread) * threads * k;
#pragma omp for schedule(dynamic, 4)
  for (int64_t i = 0; i < N; ++i) {
    const float lse = rnnsearch_kernels::lse_of_tiles(part_max_.data() + i * T, part_sum_.data() + i * T, T);
    int64_t n_all = 0;
    for (int th = 0; th < threads; ++th) {
      const int64_t n = top_n_[size_t(th * N + i)];
      const int* tk = top_tok_.data() + (int64_t(th) * N + i) * k;
      const float* tv = top_val_.data() + (int64_t(th) * N + i) * k;
      for (int64_t j = 0; j < n; ++j, ++n_all) mtok[n_all] = tk[j], mval[n_all] = tv[j];
    }
    std::iota(order, order + n_all, int64_t(0));
    std::sort(order, order + n_all, [&](int64_t p, int64_t q) {
      return mval[p] != mval[q] ? mval[p] > mval[q] : mtok[p] < mtok[q];
    });
    for (int64_t j = 0; j < k; ++j) {
      const int token = mtok[order[j]];  // a row of the active weight
      out.tokens[size_t(i * k + j)] = ids_.empty() ? token : ids_[size_t(token)];
      out.log_probs[size_t(i * k + j)] = mval[order[j]] - lse;
    }
  }
}

}  // namespace attn::models::detail
