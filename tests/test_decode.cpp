// Greedy and beam search: beam 1 == greedy, n-best order and scores that a
// teacher-forced rescoring reproduces, alignment shapes, hard alignments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "attn/autograd/ops.h"
#include "attn/decode/alignment.h"
#include "attn/decode/search.h"
#include "attn/models/seq2seq.h"
#include "tiny_models.h"
#include "reference_beam.h"

namespace attn::testing::decode_test {
namespace {
using models::ModelConfig;

ModelConfig small(const std::string& type) {
  ModelConfig c = models::model_config(type);
  c.src_vocab = 17;
  c.tgt_vocab = 19;
  c.embed = 8;
  rnn_of(c).encoder_hidden = 6;
  rnn_of(c).decoder_hidden = 10;
  rnn_of(c).attention = 5;
  if (type == "rnnsearch") rnnsearch_of(c).readout = 7;
  c.dropout = 0.1;
  if (type == "luong") rnn_of(c).cell = models::CellType::Lstm;
  return c;
}

struct Sources {
  Tensor src;
  std::vector<int64_t> lengths;
};

// B random sources of lengths in [1, 7]
Sources random_sources(int64_t B, uint64_t seed, int64_t vocab) {
  Rng rng(seed);
  Sources s;
  for (int64_t b = 0; b < B; ++b) s.lengths.push_back(1 + int64_t(rng.below(7)));
  const int64_t S = *std::max_element(s.lengths.begin(), s.lengths.end());
  s.src = Tensor::zeros({B, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < s.lengths[size_t(b)]; ++j) s.src.data()[b * S + j] = float(4 + rng.below(uint64_t(vocab - 4)));
  return s;
}

// A model whose EOS is likely enough that hypotheses end at varied lengths.
std::unique_ptr<models::Seq2SeqModel> make(const std::string& type, uint64_t seed) {
  Rng init(seed);
  auto m = models::make_model(small(type), init, seed);
  // sharper, input-dependent output distributions, and an EOS bias so that
  // searches end at varied lengths before the length limit
  for (auto& [name, p] : m->named_parameters()) {
    if (name == "output.weight")
      for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] *= 6.0f;
    if (name == "output.bias") p.data()[data::SpecialIds{}.eos] += 0.5f;
  }
  m->train(false);
  return m;
}

class Search : public ::testing::TestWithParam<std::string> {};

TEST_P(Search, BeamOneEqualsGreedy) {
  auto m = make(GetParam(), 3);
  Sources s = random_sources(9, 21, m->config().src_vocab);
  decode::SearchOptions o;
  o.beam = 1;
  auto g = decode::greedy_search(*m, s.src, s.lengths, o);
  auto b = decode::beam_search(*m, s.src, s.lengths, o);
  ASSERT_EQ(g.size(), 9u);
  ASSERT_EQ(b.size(), 9u);
  int finished = 0, lengths_seen = 0;
  std::set<size_t> lens;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i].hypotheses.size(), 1u);
    ASSERT_EQ(b[i].hypotheses.size(), 1u);
    const auto &x = g[i].hypotheses[0], &y = b[i].hypotheses[0];
    EXPECT_EQ(x.tokens, y.tokens) << "sentence " << i;
    EXPECT_EQ(x.finished, y.finished) << "sentence " << i;
    EXPECT_DOUBLE_EQ(x.log_prob, y.log_prob) << "sentence " << i;
    EXPECT_DOUBLE_EQ(x.score, y.score) << "sentence " << i;
    EXPECT_EQ(x.attention, y.attention) << "sentence " << i;
    finished += x.finished;
    lens.insert(x.tokens.size());
  }
  lengths_seen = int(lens.size());
  // the comparison means something only if hypotheses differ in length and some end with EOS
  EXPECT_GT(finished, 0);
  EXPECT_GT(lengths_seen, 1);
}

// reference_beam.h's search for one sentence, each step step() on the live
// hypotheses' rows of the state (gathered by parent).
std::vector<decode::Hypothesis> reference_beam(const models::Seq2SeqModel& m, const Tensor& src1, int64_t len,
                                               const decode::SearchOptions& o) {
  NoGradGuard no_grad;
  const int64_t limit = std::max<int64_t>(1, int64_t(o.max_len_ratio * double(len)) + o.max_len_offset);
  models::Encoded e = m.encode(src1, {len});
  models::DecoderState state = e.state;
  auto step = [&](int64_t t, const std::vector<decode::Hypothesis>& live, const std::vector<int64_t>& parents) {
    const int64_t N = int64_t(live.size());
    if (t > 0) state = models::select_rows(state, parents);
    Tensor prev = Tensor::empty({N});
    for (int64_t r = 0; r < N; ++r)
      prev.data()[r] = float(live[size_t(r)].tokens.empty() ? data::SpecialIds{}.bos : live[size_t(r)].tokens.back());
    models::StepOutput out = m.step(models::select_rows(e.memory, std::vector<int64_t>(size_t(N), 0)), state, prev, t);
    state = out.state;
    return ReferenceStep{out.log_probs.to_vector(), {}};
  };
  return testing::reference_beam(m.config().tgt_vocab, data::SpecialIds{}.eos, limit, o, step);
}

// The search asks each decoder row for only its K + 1 best tokens; the
// reference ranks the whole vocabulary: the same n-best, scores equal up to
// the fused step's rounding.
TEST_P(Search, BeamMatchesFullVocabularyReference) {
  auto m = make(GetParam(), 6);
  Sources s = random_sources(8, 26, m->config().src_vocab);
  for (decode::BeamStop stop : {decode::BeamStop::Complete, decode::BeamStop::TopEnded})
  for (int beam : {2, 4}) {
    SCOPED_TRACE(decode::beam_stop_name(stop));
    decode::SearchOptions o;
    o.beam = beam;
    o.nbest = stop == decode::BeamStop::Complete ? beam : 1;
    o.stop = stop;
    o.alignments = false;
    auto got = decode::beam_search(*m, s.src, s.lengths, o);
    int finished = 0;
    for (int64_t b = 0; b < int64_t(s.lengths.size()); ++b) {
      const int64_t S = s.src.size(1);
      Tensor one = Tensor::from(std::vector<float>(s.src.data() + b * S, s.src.data() + (b + 1) * S), {1, S});
      auto want = reference_beam(*m, one, s.lengths[size_t(b)], o);
      const auto& g = got[size_t(b)].hypotheses;
      ASSERT_EQ(g.size(), want.size()) << "beam " << beam << " sentence " << b;
      for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_EQ(g[i].tokens, want[i].tokens) << "beam " << beam << " sentence " << b << " rank " << i;
        EXPECT_EQ(g[i].finished, want[i].finished);
        EXPECT_NEAR(g[i].log_prob, want[i].log_prob, 1e-4);
        finished += g[i].finished;
      }
    }
    EXPECT_GT(finished, 0) << "beam " << beam;
  }
}

// Every hypothesis' log_prob equals the teacher-forced log-probability of its
// tokens (+ EOS), its score the normalised log_prob; n-best is sorted and distinct.
TEST_P(Search, NbestScoresMatchTeacherForcedRescoring) {
  auto m = make(GetParam(), 4);
  Sources s = random_sources(5, 22, m->config().src_vocab);
  decode::SearchOptions o;
  o.beam = 4;
  o.nbest = 3;
  o.length_penalty = 0.6;
  auto res = decode::beam_search(*m, s.src, s.lengths, o);
  NoGradGuard ng;
  int checked = 0;
  for (size_t i = 0; i < res.size(); ++i) {
    const auto& hyps = res[i].hypotheses;
    ASSERT_EQ(hyps.size(), 3u);
    for (size_t k = 0; k + 1 < hyps.size(); ++k) {
      EXPECT_GE(hyps[k].score, hyps[k + 1].score);
      EXPECT_FALSE(hyps[k].tokens == hyps[k + 1].tokens && hyps[k].finished == hyps[k + 1].finished);
    }
    for (const auto& h : hyps) {
      // rescoring batch of one: src row i, target = tokens (+ EOS)
      data::Seq2SeqBatch b;
      const int64_t L = s.lengths[i], T = int64_t(h.tokens.size()) + 1;
      b.src = Tensor::empty({1, L});
      for (int64_t j = 0; j < L; ++j) b.src.data()[j] = s.src.data()[int64_t(i) * s.src.size(1) + j];
      b.src_lengths = {L};
      b.tgt_in = Tensor::empty({1, T});
      b.tgt_out = Tensor::empty({1, T});
      b.tgt_in.data()[0] = data::SpecialIds{}.bos;
      for (int64_t t = 0; t + 1 < T; ++t) b.tgt_in.data()[t + 1] = b.tgt_out.data()[t] = float(h.tokens[size_t(t)]);
      b.tgt_out.data()[T - 1] = data::SpecialIds{}.eos;
      Tensor lp = log_softmax(m->forced_logits(b), -1);  // [T, V]
      const int64_t V = lp.size(1);
      double sum = 0;
      const int64_t steps = h.finished ? T : T - 1;
      for (int64_t t = 0; t < steps; ++t) sum += lp.data()[t * V + int64_t(b.tgt_out.data()[t])];
      EXPECT_NEAR(h.log_prob, sum, 1e-4 * (1 + std::abs(sum)));
      const double len = double(h.tokens.size() + (h.finished ? 1 : 0));
      EXPECT_NEAR(h.score, h.log_prob / std::pow(len, 0.6), 1e-9);
      // alignment shape: one row per emitted token (EOS included), src_len columns, rows sum to 1
      ASSERT_EQ(int64_t(h.attention.size()), steps * L);
      for (int64_t t = 0; t < steps; ++t) {
        double rs = 0;
        for (int64_t j = 0; j < L; ++j) rs += h.attention[size_t(t * L + j)];
        EXPECT_NEAR(rs, 1.0, 1e-5);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 15);
}

// The length limit caps every hypothesis (EOS included); bad options and a
// model left in training mode are refused.
TEST_P(Search, LengthLimitAndOptionErrors) {
  auto m = make(GetParam(), 5);
  Sources s = random_sources(4, 23, m->config().src_vocab);
  decode::SearchOptions o;
  o.max_len_ratio = 0;
  o.max_len_offset = 2;
  for (int beam : {1, 3}) {
    o.beam = beam;
    for (const auto& r : decode::search(*m, s.src, s.lengths, o))
      for (const auto& h : r.hypotheses) EXPECT_LE(h.tokens.size() + (h.finished ? 1 : 0), 2u);
  }
  o.beam = 2;
  o.nbest = 3;
  EXPECT_THROW(decode::search(*m, s.src, s.lengths, o), std::invalid_argument);
  o.nbest = 1;
  o.beam = 0;
  EXPECT_THROW(decode::search(*m, s.src, s.lengths, o), std::invalid_argument);
  o.beam = 1;
  m->train(true);
  EXPECT_THROW(decode::search(*m, s.src, s.lengths, o), std::logic_error);
}

// The length limit from both sides: a model that never emits EOS runs every
// hypothesis to exactly max(1, floor(ratio * src_len) + offset) tokens (not one
// fewer, not one more), unfinished; one that always emits EOS ends at its first
// step, also when the limit is that one step (the EOS counts towards the limit).
TEST_P(Search, LengthLimitIsReachedExactly) {
  for (float eos_bias : {-1e4f, 1e4f}) {
    auto m = make(GetParam(), 5);
    bool found = false;
    for (auto& [name, p] : m->named_parameters())
      if (name == "output.bias") p.data()[data::SpecialIds{}.eos] = eos_bias, found = true;
    ASSERT_TRUE(found);
    Sources s = random_sources(6, 29, m->config().src_vocab);
    for (int beam : {1, 3})
      for (auto [ratio, offset] : {std::pair<double, int64_t>{1.5, 1}, {0.5, 2}, {0.0, 1}, {0.0, 0}}) {
        decode::SearchOptions o;
        o.beam = beam;
        o.nbest = eos_bias < 0 && beam > 1 ? 2 : 1;
        o.max_len_ratio = ratio;
        o.max_len_offset = offset;
        const auto results = decode::search(*m, s.src, s.lengths, o);
        for (size_t b = 0; b < results.size(); ++b) {
          const size_t limit = size_t(std::max<int64_t>(1, int64_t(ratio * double(s.lengths[b])) + offset));
          SCOPED_TRACE("beam " + std::to_string(beam) + ", sentence " + std::to_string(b) + ", limit " +
                       std::to_string(limit) + ", EOS bias " + std::to_string(eos_bias));
          ASSERT_EQ(results[b].hypotheses.size(), size_t(o.nbest));
          for (const auto& h : results[b].hypotheses) {
            EXPECT_EQ(h.finished, eos_bias > 0);
            EXPECT_EQ(h.tokens.size(), eos_bias > 0 ? 0 : limit);
            EXPECT_EQ(h.attention.size(), (h.tokens.size() + h.finished) * size_t(s.lengths[b]));
          }
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Search, ::testing::Values(std::string("rnnsearch"), std::string("luong")),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(Alignment, PieceWordsAndHardAlignment) {
  const std::string sp = "\xE2\x96\x81";
  std::vector<std::string> src = {sp + "the", sp + "app", "les", sp + "."};
  std::vector<std::string> tgt = {sp + "les", sp + "pom", "mes"};
  EXPECT_EQ(decode::piece_words(src), (std::vector<int>{0, 1, 1, 2}));
  // rows: target pieces (+ EOS row, ignored), columns: source pieces
  std::vector<float> att = {0.7f, 0.1f, 0.1f, 0.1f,   // les   -> the
                            0.1f, 0.2f, 0.6f, 0.1f,   // pom   -> les (word 1)
                            0.1f, 0.5f, 0.3f, 0.1f,   // mes   -> app (word 1)
                            0.0f, 0.0f, 0.0f, 1.0f};  // </s>
  auto pairs = decode::hard_alignment(att, 4, src, tgt);
  EXPECT_EQ(decode::format_alignment(pairs), "0-0 1-1");
  EXPECT_THROW(decode::hard_alignment(att, 3, src, tgt), std::invalid_argument);
  std::string json = decode::soft_alignment_json(att, 4, src, tgt, true);
  EXPECT_NE(json.find("\"weights\":[[0.7"), std::string::npos) << json;
  EXPECT_NE(json.find("</s>"), std::string::npos) << json;
}

}  // namespace
}  // namespace attn::testing::decode_test
