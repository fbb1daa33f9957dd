// The trainer's data-parallel parts (train/data_parallel.h) without MPI: the
// shards of a batch, and the gradient buckets over a stand-in Collective that
// plays the other ranks in-process; autograd's leaf-ready hook that starts
// them during the backward pass. (The MPI runs: test_mpi_train.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/train/data_parallel.h"

using namespace attn;
using namespace attn::train;

namespace {

// `ranks` ranks whose others all hold the same gradients as this one: a sum
// multiplies by `ranks`. Records when each sum started.
class MirrorCollective : public Collective {
public:
  explicit MirrorCollective(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  void barrier() override {}
  void start_sum(float* data, int64_t n) override {
    started.push_back({n, backward_running});
    pending_.push_back({data, n});
  }
  void progress() override {}
  void finish_sums(int64_t) override {
    for (auto [data, n] : pending_)
      for (int64_t i = 0; i < n; ++i) data[i] *= float(ranks_);
    pending_.clear();
  }
  void sum(std::vector<double>& v) override {
    for (double& x : v) x *= ranks_;
  }
  void broadcast(std::string&) override {}
  std::vector<std::string> gather(const std::string& t) override { return std::vector<std::string>(size_t(ranks_), t); }

  struct Start {
    int64_t n;
    bool during_backward;
  };
  std::vector<Start> started;
  bool backward_running = false;

private:
  int ranks_;
  std::vector<std::pair<float*, int64_t>> pending_;
};

Tensor param(const Shape& s, float v) {
  Tensor t = Tensor::full(s, v);
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST(DataParallel, ShardsSplitTheBatchInOrder) {
  const std::vector<int64_t> batch = {10, 11, 12, 13, 14};
  EXPECT_EQ(shard_of(batch, 0, 2), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(shard_of(batch, 1, 2), (std::vector<int64_t>{13, 14}));
  EXPECT_EQ(shard_of(batch, 0, 1), batch);
  // fewer examples than ranks: the last ranks train on nothing
  EXPECT_EQ(shard_of({7}, 0, 3), (std::vector<int64_t>{7}));
  EXPECT_TRUE(shard_of({7}, 2, 3).empty());
  std::vector<int64_t> joined;
  for (int r = 0; r < 4; ++r)
    for (int64_t i : shard_of(batch, r, 4)) joined.push_back(i);
  EXPECT_EQ(joined, batch);
  EXPECT_THROW(shard_of(batch, 2, 2), std::invalid_argument);
}

// Three layers y = tanh(tanh(x W1) W2) W3: the backward pass finishes W3
// first, W1 last. With one parameter per bucket, W3's and W2's sums start
// while the backward pass still runs; the sums land in every .grad().
TEST(DataParallel, BucketsStartDuringBackwardAndSumIntoGrads) {
  Tensor w1 = param({4, 4}, 0.1f), w2 = param({4, 4}, 0.2f), w3 = param({4, 1}, 0.3f);
  const nn::NamedTensors params = {{"w1", w1}, {"w2", w2}, {"w3", w3}};
  MirrorCollective c(3);
  GradientExchange ex(params, c, /*bucket_bytes=*/4);  // every parameter a bucket of its own
  ASSERT_EQ(ex.buckets(), 3);

  const Tensor x = Tensor::full({2, 4}, 1.0f);
  const Tensor loss =
      attn::sum_all(attn::matmul(attn::tanh(attn::matmul(attn::tanh(attn::matmul(x, w1)), w2)), w3));
  c.backward_running = true;
  backward(loss, Tensor(), [&](const Tensor& p) { ex.on_ready(p); });
  c.backward_running = false;
  std::vector<float> g1(w1.grad().data(), w1.grad().data() + 16);
  ex.finish(1);

  ASSERT_EQ(c.started.size(), 3u);
  EXPECT_EQ(c.started[0].n, 4);   // w3, started first (reverse order)
  EXPECT_TRUE(c.started[0].during_backward);
  EXPECT_TRUE(c.started[1].during_backward);  // w2
  EXPECT_EQ(c.started[2].n, 16);  // w1: finished by the last node, so started from its hook too
  for (int i = 0; i < 16; ++i) EXPECT_FLOAT_EQ(w1.grad().data()[i], 3 * g1[size_t(i)]);
}

// A rank without examples (an empty shard) runs no backward: its buckets
// start in finish() with zeros, and the other ranks' sums still land.
TEST(DataParallel, EmptyShardSendsZerosAndReceivesTheSum) {
  Tensor w = param({2, 2}, 1.0f);
  MirrorCollective c(2);
  GradientExchange ex({{"w", w}}, c, 1 << 20);
  ex.finish(1);
  ASSERT_EQ(c.started.size(), 1u);
  ASSERT_TRUE(w.grad().defined());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(w.grad().data()[i], 0.0f);
}

TEST(DataParallel, FingerprintSeesOneBit) {
  Tensor a = Tensor::full({3, 5}, 0.25f), b = Tensor::full({7}, -1.0f);
  const uint64_t f = parameter_fingerprint({{"a", a}, {"b", b}});
  EXPECT_EQ(f, parameter_fingerprint({{"a", a.clone()}, {"b", b.clone()}}));
  Tensor c = a.clone();
  c.data()[14] = std::nextafter(0.25f, 1.0f);  // the last element, one ulp
  EXPECT_NE(f, parameter_fingerprint({{"a", c}, {"b", b}}));
}

TEST(DataParallel, StepFiguresAreSummedAndFlagsOred) {
  MirrorCollective c(2);
  const StepFigures f = agree_on_step(c, {1.5, 0.25, true, false});
  EXPECT_DOUBLE_EQ(f.loss_tokens, 3.0);
  EXPECT_DOUBLE_EQ(f.seconds, 0.5);
  EXPECT_TRUE(f.stop);
  EXPECT_FALSE(f.checkpoint);
}
