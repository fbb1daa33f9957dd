// Logits of +-1e4: every softmax, log-softmax and log-sum-exp on the way
// from scores to a loss or a search's top-k must subtract the row maximum
// (exp(89) is already inf in float, exp(-104) is 0). Each is compared with a
// plain double-precision loop on rows that are
//   shifted:  +-1e4 + N(0, 1)      (O(1) differences, far from 0)
//   spread:   uniform in [-1e4, 1e4] (nearly one-hot).
// The other tests draw N(0, 1) scores, where a softmax without the
// max-subtraction computes the same numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/kernels/vocab_topk.h"
#include "attn/models/output_loss.h"
#include "attn/tensor/random.h"
#include "attention_reference.h"
#include "compare.h"

namespace attn::testing::large_logits_test {
namespace {

// x [N, V]: row r is shifted by +1e4 (r % 3 == 0), -1e4 (r % 3 == 1) or spread over +-1e4 (r % 3 == 2)
Tensor large_logits(int64_t N, int64_t V, Rng& rng) {
  Tensor x = Tensor::empty({N, V});
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = 0; c < V; ++c)
      x.data()[r * V + c] = r % 3 == 2 ? rng.uniform(-1e4f, 1e4f) : (r % 3 == 0 ? 1e4f : -1e4f) + rng.normal();
  return x;
}

// log-sum-exp of row r over the entries with keep != 0 (all when keep is undefined), in double
double ref_lse(const Tensor& x, const Tensor& keep, int64_t r) {
  const int64_t V = x.size(1);
  double mx = -std::numeric_limits<double>::infinity(), s = 0;
  for (int64_t c = 0; c < V; ++c)
    if (!keep.defined() || keep.data()[r * V + c] != 0) mx = std::max(mx, double(x.data()[r * V + c]));
  for (int64_t c = 0; c < V; ++c)
    if (!keep.defined() || keep.data()[r * V + c] != 0) s += std::exp(double(x.data()[r * V + c]) - mx);
  return mx + std::log(s);
}

// The engine's softmax and log_softmax ops (masked), forward and backward.
TEST(LargeLogits, SoftmaxAndLogSoftmaxOps) {
  Rng rng(1);
  const int64_t N = 9, V = 37;
  Tensor x = large_logits(N, V, rng), dy = randn({N, V}, rng), keep = Tensor::ones({N, V});
  for (int64_t i = 0; i < N * V; ++i)
    if (i % 5 == 1) keep.data()[i] = 0.0f;
  for (bool log : {false, true})
    for (bool masked : {false, true}) {
      SCOPED_TRACE(std::string(log ? "log_softmax" : "softmax") + (masked ? ", masked" : ""));
      const Tensor m = masked ? keep : Tensor();
      Tensor xx = x.clone().set_requires_grad(true);
      Tensor y = log ? log_softmax(xx, -1, m) : softmax(xx, -1, m);
      backward(y, dy);
      std::vector<double> ry(size_t(N * V)), rdx(size_t(N * V));
      for (int64_t r = 0; r < N; ++r) {
        const double lse = ref_lse(x, m, r);
        double s = 0;  // softmax: sum_j y_j dy_j; log_softmax: sum_j dy_j (visible j)
        for (int64_t c = 0; c < V; ++c) {
          const size_t i = size_t(r * V + c);
          if (masked && keep.data()[i] == 0) continue;
          const double p = std::exp(double(x.data()[i]) - lse);
          ry[i] = log ? double(x.data()[i]) - lse : p;
          s += log ? double(dy.data()[i]) : p * dy.data()[i];
        }
        for (int64_t c = 0; c < V; ++c) {
          const size_t i = size_t(r * V + c);
          if (masked && keep.data()[i] == 0) continue;
          const double p = std::exp(double(x.data()[i]) - lse);
          rdx[i] = log ? dy.data()[i] - p * s : p * (dy.data()[i] - s);
        }
      }
      // p to float's rounding; log p = x - lse to a few ulp of 1e4 (1e-3 each), and so
      // log_softmax's backward dy - exp(log p) sum(dy) to that relative
      EXPECT_ABS_CLOSE(y, to_tensor(ry, {N, V}), log ? 4e-3 : 1e-6, "forward");
      EXPECT_ABS_CLOSE(xx.grad(), to_tensor(rdx, {N, V}), log ? 4e-3 : 1e-5, "backward");
    }
}

// targets [N]: (r * 7) % V, every 4th row ignored (-1)
Tensor targets_for(int64_t N, int64_t V) {
  Tensor t = Tensor::empty({N});
  for (int64_t r = 0; r < N; ++r) t.data()[r] = r % 4 == 3 ? -1.0f : float((r * 7) % V);
  return t;
}

// The loss of cross_entropy / output_cross_entropy (label smoothing eps, rows with
// target -1 ignored) in double, and dloss/dlogits into dl [N, V].
double ref_cross_entropy(const Tensor& logits, const Tensor& targets, double eps, std::vector<double>& dl) {
  const int64_t N = logits.size(0), V = logits.size(1);
  dl.assign(size_t(N * V), 0.0);
  double total = 0;
  int64_t count = 0;
  for (int64_t r = 0; r < N; ++r) count += targets.data()[r] >= 0;
  for (int64_t r = 0; r < N; ++r) {
    const int64_t t = int64_t(targets.data()[r]);
    if (t < 0) continue;
    const double lse = ref_lse(logits, Tensor(), r);
    double mean = 0;
    for (int64_t c = 0; c < V; ++c) mean += double(logits.data()[r * V + c]) / double(V);
    total += (1 - eps) * (lse - logits.data()[r * V + t]) + eps * (lse - mean);
    for (int64_t c = 0; c < V; ++c)
      dl[size_t(r * V + c)] =
          (std::exp(double(logits.data()[r * V + c]) - lse) - (c == t ? 1 - eps : 0.0) - eps / double(V)) / double(count);
  }
  return total / double(count);
}

TEST(LargeLogits, CrossEntropyOp) {
  Rng rng(2);
  const int64_t N = 12, V = 41;
  Tensor x = large_logits(N, V, rng).set_requires_grad(true), t = targets_for(N, V);
  CrossEntropyOptions o;
  o.ignore_index = -1;
  o.label_smoothing = 0.1f;
  Tensor loss = cross_entropy(x, t, o);
  backward(loss);
  std::vector<double> dl;
  const double ref = ref_cross_entropy(x, t, 0.1, dl);
  EXPECT_NEAR(loss.item(), ref, 1e-6 * std::abs(ref) + 2e-3);  // ~1e4 (the spread rows' wrong classes)
  EXPECT_ABS_CLOSE(x.grad(), to_tensor(dl, {N, V}), 1e-6, "dlogits");
}

// The fused projection + loss: logits = x W^T + b shifted by +-1e4 through the
// bias, or spread over +-1e4 through W, against the double loop.
TEST(LargeLogits, OutputCrossEntropy) {
  const int64_t N = 40, R = 8, V = 150;
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(kind == 0 ? "bias +1e4" : kind == 1 ? "bias -1e4" : "W spread over +-1e4");
    Rng rng(3 + uint64_t(kind));
    Tensor x = randn({N, R}, rng), W = randn({V, R}, rng, kind == 2 ? 2e3f : 0.3f), b = randn({V}, rng);
    if (kind < 2)
      for (int64_t c = 0; c < V; ++c) b.data()[c] += kind == 0 ? 1e4f : -1e4f;
    Tensor t = targets_for(N, V);
    for (Tensor* p : {&x, &W, &b}) p->set_requires_grad(true);
    CrossEntropyOptions o;
    o.ignore_index = -1;
    o.label_smoothing = 0.1f;
    Tensor loss = models::output_cross_entropy(x, W, b, t, o);
    backward(loss);
    // the logits in double from the same float inputs
    Tensor logits = Tensor::empty({N, V});
    for (int64_t r = 0; r < N; ++r)
      for (int64_t c = 0; c < V; ++c) {
        double s = b.data()[c];
        for (int64_t k = 0; k < R; ++k) s += double(x.data()[r * R + k]) * W.data()[c * R + k];
        logits.data()[r * V + c] = float(s);  // float's rounding of a logit: below 1e-3
      }
    std::vector<double> dl, dx(size_t(N * R), 0.0), dW(size_t(V * R), 0.0), db(size_t(V), 0.0);
    const double ref = ref_cross_entropy(logits, t, 0.1, dl);
    for (int64_t r = 0; r < N; ++r)
      for (int64_t c = 0; c < V; ++c) {
        const double g = dl[size_t(r * V + c)];
        db[size_t(c)] += g;
        for (int64_t k = 0; k < R; ++k) {
          dx[size_t(r * R + k)] += g * W.data()[c * R + k];
          dW[size_t(c * R + k)] += g * x.data()[r * R + k];
        }
      }
    EXPECT_NEAR(loss.item(), ref, 1e-5 * std::abs(ref) + 2e-3);
    EXPECT_NORMWISE_CLOSE(x.grad(), to_tensor(dx, {N, R}), 1e-5, "dx");
    EXPECT_NORMWISE_CLOSE(W.grad(), to_tensor(dW, {V, R}), 1e-5, "dW");
    EXPECT_NORMWISE_CLOSE(b.grad(), to_tensor(db, {V}), 1e-5, "db");
  }
}

// Decoding's log-softmax and the searches' fused log-sum-exp / top-k.
TEST(LargeLogits, LogSoftmaxRowsAndVocabTopK) {
  Rng rng(4);
  const int64_t N = 6, V = 1003, K = 5;  // V: vector lanes and a tail
  Tensor x = large_logits(N, V, rng);
  Tensor lp = models::log_softmax_rows(x);
  std::vector<double> ref(size_t(N * V));
  for (int64_t r = 0; r < N; ++r) {
    const double lse = ref_lse(x, Tensor(), r);
    for (int64_t c = 0; c < V; ++c) ref[size_t(r * V + c)] = double(x.data()[r * V + c]) - lse;
    const float* row = x.data() + r * V;
    const float got = models::log_sum_exp_row(row, V);
    EXPECT_NEAR(got, lse, 2e-3) << "row " << r;  // two ulp at 1e4
    int tok[K];
    float val[K];
    models::top_k_row(row, V, got, K, tok, val);
    std::vector<int> order(static_cast<size_t>(V));
    for (int c = 0; c < V; ++c) order[size_t(c)] = c;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < K; ++j) {
      EXPECT_EQ(tok[j], order[size_t(j)]) << "row " << r << " rank " << j;
      EXPECT_NEAR(val[j], double(row[order[size_t(j)]]) - lse, 4e-3) << "row " << r << " rank " << j;
    }
  }
  EXPECT_ABS_CLOSE(lp, to_tensor(ref, {N, V}), 4e-3, "log_softmax_rows");
}

}  // namespace
}  // namespace attn::testing::large_logits_test
