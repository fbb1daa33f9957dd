#include <gtest/gtest.h>

#include "attn/models/toy_seq2seq.h"
#include "attn/tensor/pool.h"
#include "attn/train/optim.h"

namespace attn {
namespace {

TEST(Pool, ReusesReleasedBlocks) {
  void* a = pool::allocate(10000);
  pool::release(a, 10000);
  auto before = pool::stats();
  void* b = pool::allocate(9990);  // same size class
  EXPECT_EQ(a, b);
  EXPECT_EQ(pool::stats().system_allocs, before.system_allocs);
  pool::release(b, 9990);
}

// From the second step on, a training step of the same shapes runs entirely
// on recycled blocks: no call reaches the system allocator.
TEST(Pool, TrainingStepAllocatesNothingNewAfterWarmup) {
  Rng rng(5), data_rng(6);
  models::ToySeq2SeqOptions mo;
  mo.hidden = 64;
  models::ToySeq2Seq model(mo, rng);
  train::Adam adam(model.named_parameters());
  auto step = [&] {
    data::Seq2SeqBatch b = data::reverse_digits_batch(32, 6, 6, data_rng);  // fixed shapes
    adam.zero_grad();
    Tensor loss = model.loss(b);
    backward(loss);
    adam.step();
  };
  step();
  step();
  size_t before = pool::stats().system_allocs;
  for (int i = 0; i < 3; ++i) step();
  EXPECT_EQ(pool::stats().system_allocs, before);
  EXPECT_GT(pool::stats().pool_hits, 0u);
}

}  // namespace
}  // namespace attn
