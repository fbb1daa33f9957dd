// The fused Luong search step (models/luong_search.h) against Luong::step()
// on the memory rows it selects, for every cell, score and window, one and two
// layers, both weight layouts, one and two threads: the tokens are the k best
// of step()'s log-probabilities, and the weights and every state tensor agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "attn/cpu/threading.h"
#include "attn/decode/search.h"
#include "attn/models/luong/luong.h"
#include "attn/models/luong/luong_search.h"
#include "step_top_check.h"
#include "tiny_models.h"

namespace attn::testing::luong_search_test {
namespace {

std::vector<LuongVariant> search_variants() {
  std::vector<LuongVariant> v = luong_variants(false);
  for (LuongVariant& x : v) x.config.tgt_vocab = 301;  // several logits tiles
  return v;
}

class LuongSearchStep : public ::testing::TestWithParam<LuongVariant> {};

TEST_P(LuongSearchStep, MatchesStep) {
  const models::ModelConfig& c = GetParam().config;
  NoGradGuard no_grad;
  Rng init(9);
  auto model = models::make_model(c, init, 9);
  model->train(false);
  const data::Seq2SeqBatch b = tiny_batch(c.src_vocab, c.tgt_vocab);  // lengths 4, 2, 3
  models::Encoded e = model->encode(b.src, b.src_lengths);
  const std::vector<int64_t> rows = {2, 2, 0, 1, 1, 1, 0};  // beams of sentences, any order
  const int64_t N = int64_t(rows.size()), V = c.tgt_vocab, S = b.src.size(1), k = 4;
  // a state three steps in (local-m's window moves; local-m past the short sentence: empty)
  models::DecoderState state = models::select_rows(e.state, rows);
  Rng rng(10);
  Tensor ids = Tensor::empty({N});
  std::vector<int> prev(static_cast<size_t>(N));
  for (int s = 0; s < 4; ++s) {
    for (int64_t i = 0; i < N; ++i) ids.data()[i] = float(prev[size_t(i)] = int(rng.below(uint64_t(V))));
    if (s == 3) break;
    state = model->step(models::select_rows(e.memory, rows), state, ids, s).state;
  }
  models::StepOutput ref = model->step(models::select_rows(e.memory, rows), state, ids, 3);
  for (int threads : {1, 2})
    for (int64_t max_rows : {N, models::kPackRows}) {  // row-major and packed weights
      set_num_threads(threads);
      SCOPED_TRACE("threads " + std::to_string(threads) + ", max_rows " + std::to_string(max_rows));
      auto dec = model->decoder(e.memory, max_rows);
      dec->report_attention(models::kAttentionMap);
      models::DecoderState st = dec->start(state, N, 4);  // the step updates its own copy in place
      const models::StepTop& out = dec->step(rows, st, prev, k, 3);
      expect_top_k_of(out, ref.log_probs, k);
      for (int64_t i = 0; i < N; ++i) {
        for (int64_t j = 0; j < S; ++j)
          EXPECT_NEAR(out.attention.data()[i * S + j], ref.attention.items.at(0).second.data()[i * S + j], 1e-5) << i << "," << j;
      }
      ASSERT_EQ(st.buffers().size(), ref.state.buffers().size());
      for (const auto& [name, y] : ref.state.buffers()) {
        const Tensor x = st.live(name);
        ASSERT_EQ(x.shape(), y.shape()) << "state tensor " << name;
        for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(x.data()[i], y.data()[i], 1e-5) << "state " << name << "[" << i << "]";
      }
    }
  set_num_threads(0);
}

// Greedy and beam search through the fused step: beam 1 equals greedy bit for
// bit, and every hypothesis' score is the sum of step()'s log-probabilities of its tokens.
TEST_P(LuongSearchStep, SearchesScoreTheirTokensAsStepDoes) {
  const models::ModelConfig& c = GetParam().config;
  Rng init(12);
  auto model = models::make_model(c, init, 12);
  model->train(false);
  const data::Seq2SeqBatch b = tiny_batch(c.src_vocab, c.tgt_vocab);
  decode::SearchOptions o;
  o.length_penalty = 0.0;
  o.max_len_ratio = 0.0, o.max_len_offset = 6;
  auto g = decode::greedy_search(*model, b.src, b.src_lengths, o);
  auto b1 = decode::beam_search(*model, b.src, b.src_lengths, o);
  NoGradGuard no_grad;
  for (size_t s = 0; s < g.size(); ++s) {
    const auto &x = g[s].hypotheses[0], &y = b1[s].hypotheses[0];
    EXPECT_EQ(x.tokens, y.tokens) << s;
    EXPECT_EQ(x.log_prob, y.log_prob) << s;
    // rescore the greedy tokens with step()
    Tensor one = Tensor::from(std::vector<float>(b.src.data() + int64_t(s) * b.src.size(1),
                                                 b.src.data() + int64_t(s + 1) * b.src.size(1)),
                              {1, b.src.size(1)});
    models::Encoded e = model->encode(one, {b.src_lengths[s]});
    models::DecoderState st = e.state;
    double total = 0;
    int prev = data::SpecialIds{}.bos;
    int64_t t = 0;
    for (int tok : x.tokens) {
      models::StepOutput out = model->step(e.memory, st, Tensor::from({float(prev)}, {1}), t++);
      total += out.log_probs.data()[tok];
      st = out.state;
      prev = tok;
    }
    if (x.finished) {
      models::StepOutput out = model->step(e.memory, st, Tensor::from({float(prev)}, {1}), t);
      total += out.log_probs.data()[data::SpecialIds{}.eos];
    }
    EXPECT_NEAR(x.log_prob, total, 1e-4) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(All, LuongSearchStep, ::testing::ValuesIn(search_variants()),
                         [](const ::testing::TestParamInfo<LuongVariant>& i) { return i.param.name; });

TEST(LuongSearchStep, RejectsBadInput) {
  models::ModelConfig c = tiny("luong");
  Rng init(1);
  auto model = models::make_model(c, init, 1);
  EXPECT_THROW(model->decoder(model->encode(tiny_batch(11, 13).src, {4, 2, 3}).memory, 3), std::logic_error);
  model->train(false);
  NoGradGuard no_grad;
  const data::Seq2SeqBatch b = tiny_batch(c.src_vocab, c.tgt_vocab);
  models::Encoded e = model->encode(b.src, b.src_lengths);
  auto dec = model->decoder(e.memory, 3);
  EXPECT_THROW(dec->step({0, 1, 2}, e.state, {1, 1}, 1, 0), std::invalid_argument);     // prev of 2 rows
  EXPECT_THROW(dec->step({0, 1, 5}, e.state, {1, 1, 1}, 1, 0), std::invalid_argument);  // no sentence 5
  EXPECT_THROW(dec->step({0, 1, 2}, e.state, {1, 1, 13}, 1, 0), std::invalid_argument); // token beyond V
  EXPECT_THROW(dec->step({0, 1, 2}, e.state, {1, 1, 1}, 14, 0), std::invalid_argument); // k beyond V
  models::DecoderState short_state;  // h̃ missing
  for (const auto& [name, t] : e.state.buffers())
    if (name != "feed") short_state.set(name, t);
  EXPECT_THROW(dec->step({0, 1, 2}, short_state, {1, 1, 1}, 1, 0), std::invalid_argument);
  Rng r(2);
  auto other = models::make_model(tiny("rnnsearch"), r, 2);
  other->train(false);
  EXPECT_THROW(model->decoder(e.memory, 3, other->prepare_decoder(3)), std::invalid_argument);
}

}  // namespace
}  // namespace attn::testing::luong_search_test
