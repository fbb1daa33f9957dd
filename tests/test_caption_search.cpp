// The captioner's fused search step (models/show_attend_tell/show_attend_tell_search.h)
// for soft and hard attention, on random images [B, 3, 8, 8]:
// - in fp32 it is ShowAttendTell::step() (eval mode) step after step: the
//   log-probabilities of the whole vocabulary, the attention map and the state
//   {h, c} agree within 1e-5, for few rows (fp32 row-major weights) and many
//   (packed), on one thread and, for a model large enough to go parallel, two;
// - int8 and bf16 stay within a stated tolerance of fp32 and differ from it
//   (the type was applied);
// - greedy and beam search through it give reference_beam.h's search over
//   step()'s full distributions, and beam 1 equals greedy;
// - restricted to a shortlist, a step is the full step renormalised;
// - it refuses a training-mode model, another kind's weights, a bad state.
//
// The tolerances: the largest |log p_type - log p_fp32| over 6 steps, every
// token and row (5 and 20 rows gave the same), measured 2026-11-28 on weights at
// their initial scale (the embedding N(0, 1): logits spanning a few nats):
//   tiny (E 6, Hd 7, A 5, V 9):       soft int8 0.0116, bf16 0.0082; hard int8 0.0126, bf16 0.0094
//   wide (E 32, Hd 64, A 40, V 301):  soft int8 0.0150, bf16 0.0067; hard int8 0.0163, bf16 0.0062
// the bounds, 0.05 (int8) and 0.03 (bf16), hold about 3x the largest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/cpu/threading.h"
#include "attn/decode/search.h"
#include "attn/models/kinds.h"
#include "attn/models/seq2seq.h"
#include "attn/models/show_attend_tell/show_attend_tell_config.h"
#include "attn/models/step_packing.h"
#include "attn/nn/step_weight_types.h"
#include "attn/tensor/random.h"
#include "caption_run.h"
#include "reference_beam.h"
#include "step_compare.h"
#include "step_top_check.h"

namespace attn::testing::caption_search_test {
namespace {

using models::ImageAttention;
using nn::StepWeightType;

constexpr int64_t kCells = 4;  // the tiny captioner's 2 x 2 grid
constexpr double kInt8Tol = 0.05, kBf16Tol = 0.03;

// A larger captioner on the same images: E 32, Hd 64, A 40, V 301 (several logits
// tiles; 20 rows make a step large enough for two threads)
models::ModelConfig wide_captioner_config(ImageAttention a) {
  models::ModelConfig c = tiny_captioner_config(a);
  c.embed = 32;
  c.tgt_vocab = 301;
  models::ShowAttendTellConfig& s = c.section<models::ShowAttendTellConfig>();
  s.decoder_hidden = 64;
  s.attention = 40;
  return c;
}

struct Variant {
  std::string name;
  models::ModelConfig config;
};

std::vector<Variant> variants() {
  return {{"SoftTiny", tiny_captioner_config(ImageAttention::Soft)},
          {"HardTiny", tiny_captioner_config(ImageAttention::Hard)},
          {"SoftWide", wide_captioner_config(ImageAttention::Soft)},
          {"HardWide", wide_captioner_config(ImageAttention::Hard)}};
}

std::unique_ptr<models::Seq2SeqModel> make(const models::ModelConfig& c, uint64_t seed = 11) {
  Rng init(seed);
  auto m = models::make_model(c, init, 1);
  m->train(false);
  return m;
}

Tensor images(int64_t B, uint64_t seed) {
  Rng rng(seed);
  return randn({B, 3, 8, 8}, rng);
}

// N decoder rows over B images, in no particular order: [N]
std::vector<int64_t> rows_of(int64_t N, int64_t B) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < N; ++i) rows.push_back((2 * i + 1) % B);
  return rows;
}

// x [rows, ...] and y alike within tol, element by element
void expect_near_all(const Tensor& x, const Tensor& y, float tol, const std::string& what) {
  ASSERT_TRUE(x.defined()) << what;
  ASSERT_EQ(x.shape(), y.shape()) << what;
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(x.data()[i], y.data()[i], tol) << what << "[" << i << "]";
}

class CaptionSearch : public ::testing::TestWithParam<Variant> {};

// The fused fp32 step and step() side by side for 6 steps over N rows, fed the
// same random tokens: log p of every token, the attention and h, c within 1e-5.
TEST_P(CaptionSearch, Fp32StepIsStepStepAfterStep) {
  const auto m = make(GetParam().config);
  NoGradGuard no_grad;
  const int64_t B = 3, V = m->config().tgt_vocab, T = 6;
  const models::Encoded e = m->encode(images(B, 5), std::vector<int64_t>(size_t(B), kCells));
  for (int threads : {1, 2})
    for (int64_t N : {5, 20}) {  // fp32 row-major below kPackRows rows, packed from it
      set_num_threads(threads);
      SCOPED_TRACE("threads " + std::to_string(threads) + ", rows " + std::to_string(N));
      ASSERT_EQ(models::step_layout(N, StepWeightType::F32).packed, N >= models::kPackRows);
      const std::vector<int64_t> rows = rows_of(N, B);
      const models::EncoderMemory memory = models::select_rows(e.memory, rows);
      models::DecoderState ref = models::select_rows(e.state, rows);
      auto dec = m->decoder(e.memory, N, m->prepare_decoder(N, StepWeightType::F32));
      dec->report_attention(models::kAttentionMap);
      models::DecoderState state = dec->start(models::select_rows(e.state, rows), N, T);
      std::vector<int> prev(size_t(N), m->config().specials.bos);
      Rng rng(7);
      for (int64_t t = 0; t < T; ++t) {
        SCOPED_TRACE("step " + std::to_string(t));
        Tensor ids = Tensor::empty({N});
        for (int64_t i = 0; i < N; ++i) ids.data()[i] = float(prev[size_t(i)]);
        const models::StepOutput want = m->step(memory, ref, ids, t);
        const models::StepTop& got = dec->step(rows, state, prev, V, t);
        expect_top_k_of(got, want.log_probs, V);  // the whole vocabulary, best first
        expect_near_all(got.attention, *want.attention.find(models::kAttentionMap), 1e-5f, "attention");
        for (const char* name : {"h", "c"}) expect_near_all(state.live(name), want.state.live(name), 1e-5f, name);
        ref = want.state;
        for (int64_t i = 0; i < N; ++i) prev[size_t(i)] = int(rng.below(uint64_t(V)));
      }
    }
  set_num_threads(0);
}

// The largest |log p_type - log p_fp32| over every token, row and step of the
// fused decoders in fp32 and `type` side by side (both fed fp32's best tokens).
double max_log_prob_gap(const models::Seq2SeqModel& m, StepWeightType type, int64_t N) {
  NoGradGuard no_grad;
  const int64_t B = 3, V = m.config().tgt_vocab, T = 6;
  const models::Encoded e = m.encode(images(B, 6), std::vector<int64_t>(size_t(B), kCells));
  const std::vector<int64_t> rows = rows_of(N, B);
  auto ref = m.decoder(e.memory, N, m.prepare_decoder(N, StepWeightType::F32));
  auto dec = m.decoder(e.memory, N, m.prepare_decoder(N, type));
  return testing::max_log_prob_gap(*ref, *dec, models::select_rows(e.state, rows), rows, V, T, m.config().specials.bos);
}

TEST_P(CaptionSearch, Int8AndBf16LogProbsStayNearFp32) {
  const auto m = make(GetParam().config);
  for (int64_t N : {5, 20}) {
    const double i8 = max_log_prob_gap(*m, StepWeightType::I8, N);
    const double bf = max_log_prob_gap(*m, StepWeightType::BF16, N);
    std::printf("[ gaps     ] %s rows %lld: int8 %.5f, bf16 %.5f\n", GetParam().name.c_str(), (long long)N, i8, bf);
    EXPECT_LE(i8, kInt8Tol) << "rows " << N;
    EXPECT_LE(bf, kBf16Tol) << "rows " << N;
    EXPECT_GT(i8, 0.0) << "int8 rounds: identical log-probabilities mean the type was not applied";
    EXPECT_GT(bf, 0.0) << "bf16 rounds: identical log-probabilities mean the type was not applied";
    RecordProperty(GetParam().name + "_rows" + std::to_string(N), std::to_string(i8) + " " + std::to_string(bf));
  }
}

// reference_beam.h's search for image b alone, each step step() on the live
// hypotheses' rows of the state (gathered by parent), with their attention.
std::vector<decode::Hypothesis> reference_search(const models::Seq2SeqModel& m, const Tensor& image,
                                                 const decode::SearchOptions& o) {
  NoGradGuard no_grad;
  const int64_t limit = std::max<int64_t>(1, int64_t(o.max_len_ratio * double(kCells)) + o.max_len_offset);
  const models::Encoded e = m.encode(image, {kCells});
  models::DecoderState state = e.state;
  auto step = [&](int64_t t, const std::vector<decode::Hypothesis>& live, const std::vector<int64_t>& parents) {
    const int64_t N = int64_t(live.size());
    if (t > 0) state = models::select_rows(state, parents);
    Tensor prev = Tensor::empty({N});
    for (int64_t r = 0; r < N; ++r)
      prev.data()[r] = float(live[size_t(r)].tokens.empty() ? m.config().specials.bos : live[size_t(r)].tokens.back());
    models::StepOutput out = m.step(models::select_rows(e.memory, std::vector<int64_t>(size_t(N), 0)), state, prev, t);
    state = out.state;
    ReferenceStep r{out.log_probs.to_vector(), {}};
    const Tensor& a = *out.attention.find(models::kAttentionMap);
    for (int64_t i = 0; i < N; ++i) r.attention.emplace_back(a.data() + i * kCells, a.data() + (i + 1) * kCells);
    return r;
  };
  return reference_beam(m.config().tgt_vocab, m.config().specials.eos, limit, o, step);
}

// decode::search (greedy, beam 3) through the fused step: the reference's
// hypotheses, log-probabilities and attention; beam 1 is greedy exactly.
TEST_P(CaptionSearch, SearchesGiveTheReferenceSearchOverStep) {
  const auto m = make(GetParam().config, 12);
  const int64_t B = 4;
  const Tensor pixels = images(B, 8);
  const std::vector<int64_t> lengths(size_t(B), kCells);
  for (int beam : {1, 3}) {
    decode::SearchOptions o;
    o.beam = beam;
    o.nbest = beam;
    o.max_len_ratio = 0.0, o.max_len_offset = 6;
    const std::vector<decode::SearchResult> got = decode::search(*m, pixels, lengths, o);
    ASSERT_EQ(got.size(), size_t(B));
    size_t tokens = 0;  // the comparison means something only if the captions have words
    for (const auto& r : got) tokens += r.hypotheses.at(0).tokens.size();
    EXPECT_GE(tokens, size_t(B)) << "beam " << beam;
    for (int64_t b = 0; b < B; ++b) {
      const Tensor one = Tensor::from(std::vector<float>(pixels.data() + b * 192, pixels.data() + (b + 1) * 192),
                                      {1, 3, 8, 8});
      const std::vector<decode::Hypothesis> want = reference_search(*m, one, o);
      const auto& g = got[size_t(b)].hypotheses;
      ASSERT_EQ(g.size(), want.size()) << "beam " << beam << " image " << b;
      for (size_t i = 0; i < g.size(); ++i) {
        const std::string what = "beam " + std::to_string(beam) + " image " + std::to_string(b) + " rank " +
                                 std::to_string(i);
        EXPECT_EQ(g[i].tokens, want[i].tokens) << what;
        EXPECT_EQ(g[i].finished, want[i].finished) << what;
        EXPECT_NEAR(g[i].log_prob, want[i].log_prob, 1e-4) << what;
        ASSERT_EQ(g[i].attention.size(), want[i].attention.size()) << what;
        for (size_t j = 0; j < g[i].attention.size(); ++j) EXPECT_NEAR(g[i].attention[j], want[i].attention[j], 1e-5) << what;
      }
    }
  }
  decode::SearchOptions o;
  o.max_len_ratio = 0.0, o.max_len_offset = 6;
  const auto g = decode::greedy_search(*m, pixels, lengths, o);
  const auto b1 = decode::beam_search(*m, pixels, lengths, o);
  for (int64_t b = 0; b < B; ++b) {
    const auto &x = g[size_t(b)].hypotheses[0], &y = b1[size_t(b)].hypotheses[0];
    EXPECT_EQ(x.tokens, y.tokens) << b;
    EXPECT_EQ(x.log_prob, y.log_prob) << b;
    EXPECT_EQ(x.attention, y.attention) << b;
  }
  // and in int8 (the search prepares its own weights in the type): a caption of every image, its attention rows
  o.compute = StepWeightType::I8;
  o.beam = 3;
  const auto i8 = decode::search(*m, pixels, lengths, o);
  ASSERT_EQ(i8.size(), size_t(B));
  for (const auto& r : i8) {
    const decode::Hypothesis& h = r.hypotheses.at(0);
    EXPECT_EQ(h.attention.size(), (h.tokens.size() + (h.finished ? 1 : 0)) * size_t(kCells));
  }
}

// Restricted to a list, each step gives the full step's log p renormalised over it (fp32 and int8).
TEST_P(CaptionSearch, ARestrictedStepIsTheFullStepRenormalised) {
  const auto m = make(GetParam().config);
  NoGradGuard no_grad;
  const int64_t B = 2, N = 5, V = m->config().tgt_vocab;
  const std::vector<int> list = {2, 4, 5, 8};
  const int64_t n = int64_t(list.size());
  const models::Encoded e = m->encode(images(B, 9), std::vector<int64_t>(size_t(B), kCells));
  const std::vector<int64_t> rows = rows_of(N, B);
  for (StepWeightType type : {StepWeightType::F32, StepWeightType::I8}) {
    auto full = m->decoder(e.memory, N, m->prepare_decoder(N, type));
    auto part = m->decoder(e.memory, N, m->prepare_decoder(N, type));
    part->restrict_vocabulary(list);
    EXPECT_LT(max_renormalised_gap(*full, *part, models::select_rows(e.state, rows), rows, V, list, 4,
                                   m->config().specials.bos),
              2e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(All, CaptionSearch, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& i) { return i.param.name; });

TEST(CaptionSearchStep, RejectsBadInput) {
  auto m = make(tiny_captioner_config(ImageAttention::Soft));
  NoGradGuard no_grad;
  const models::Encoded e = m->encode(images(3, 4), {kCells, kCells, kCells});
  m->train(true);
  EXPECT_THROW(m->decoder(e.memory, 3), std::logic_error);
  EXPECT_THROW(m->prepare_decoder(3, StepWeightType::I8), std::logic_error);
  m->train(false);
  auto dec = m->decoder(e.memory, 3);
  models::DecoderState s = dec->start(e.state, 3, 4);
  EXPECT_THROW(dec->step({0, 1, 2}, s, {1, 1}, 1, 0), std::invalid_argument);     // prev of 2 rows
  EXPECT_THROW(dec->step({0, 1, 3}, s, {1, 1, 1}, 1, 0), std::invalid_argument);  // no image 3
  EXPECT_THROW(dec->step({0, 1, 2}, s, {1, 1, 9}, 1, 0), std::invalid_argument);  // token beyond V
  EXPECT_THROW(dec->step({0, 1, 2}, s, {1, 1, 1}, 10, 0), std::invalid_argument); // k beyond V
  EXPECT_THROW(dec->report_attention("self.layer0.head0"), std::invalid_argument);
  models::DecoderState only_h;
  only_h.set("h", e.state.live("h"));
  EXPECT_THROW(dec->step({0, 1, 2}, only_h, {1, 1, 1}, 1, 0), std::invalid_argument);
  auto other = make(models::model_config_from_json(
      R"({"type": "luong", "src_vocab": 9, "tgt_vocab": 9, "embed": 6, "encoder_hidden": 8, "decoder_hidden": 8,
          "dropout": 0.0})"));
  EXPECT_THROW(m->decoder(e.memory, 3, other->prepare_decoder(3)), std::invalid_argument);
}

}  // namespace
}  // namespace attn::testing::caption_search_test
