#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/data/batcher.h"
#include "attn/models/kinds.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"
#include "attn/models/seq2seq.h"
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

// Many batch shapes, one after another: each shape's blocks fall into other
// size classes, and an unbounded cache would keep every shape's working set
// (40 x 48 MiB here). The cache stays under max(256 MiB, peak in use).
TEST(Pool, CacheStaysBoundedAcrossManyShapes) {
  pool::trim();
  const size_t limit = std::max(size_t(256) << 20, pool::stats().peak_bytes_in_use);
  const size_t evictions_before = pool::stats().evictions;
  for (int shape = 0; shape < 40; ++shape) {
    const size_t bytes = (size_t(1) << 20) + size_t(shape) * (size_t(1) << 18);  // 1 MiB + shape/4 MiB
    std::vector<void*> blocks;  // untouched: virtual memory only, the test stays cheap
    const size_t n = (size_t(48) << 20) / bytes;
    for (size_t i = 0; i < n; ++i) blocks.push_back(pool::allocate(bytes));
    for (void* b : blocks) pool::release(b, bytes);
    ASSERT_LE(pool::stats().bytes_cached, limit) << "after shape " << shape;
  }
  EXPECT_GT(pool::stats().evictions, evictions_before);
  // the newest shape is still cached whole: a step of the same shape again reuses it
  const size_t bytes = (size_t(1) << 20) + size_t(39) * (size_t(1) << 18);
  const size_t hits = pool::stats().pool_hits;
  void* again = pool::allocate(bytes);
  EXPECT_EQ(pool::stats().pool_hits, hits + 1);
  pool::release(again, bytes);
}

// From the second step on, a training step of the same shapes runs entirely
// on recycled blocks: no call reaches the system allocator.
TEST(Pool, TrainingStepAllocatesNothingNewAfterWarmup) {
  models::ModelConfig c = models::model_config("rnnsearch");  // a small rnnsearch
  c.src_vocab = c.tgt_vocab = 40;
  models::RnnSearchConfig& r = c.section<models::RnnSearchConfig>();
  c.embed = r.encoder_hidden = r.attention = r.readout = 16;
  r.decoder_hidden = 32;
  Rng rng(5);
  auto model = models::make_model(c, rng, 6);
  train::Adam adam(model->named_parameters());
  data::EncodedCorpus corpus;  // 32 pairs of 6 ids each: every batch has the same shapes
  for (int i = 0; i < 32; ++i) {
    corpus.src.push_back({4 + i % 30, 5, 6, 7, 8, 9});
    corpus.tgt.push_back({9, 8, 7, 6, 5, 4 + i % 30});
    corpus.line.push_back(i + 1);
  }
  data::BatchOptions bo;
  bo.max_tokens = 32 * 7;
  const data::Batcher batcher(corpus, bo);
  auto step = [&] {
    data::Seq2SeqBatch b = batcher.make_batch(batcher.plan_epoch(0).at(0));
    adam.zero_grad();
    Tensor loss = model->loss(b);
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
