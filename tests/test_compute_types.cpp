// A search's compute type (--compute, nn/step_weight_types.h) on whole models:
// for rnnsearch, luong and the Transformer, the int8 and bf16 decoders' log
// probabilities over the whole vocabulary stay within a stated tolerance of
// fp32's, step after step, for few rows (fp32 row-major) and many (packed);
// a greedy search in int8 mostly picks fp32's tokens; the captioner prepares
// every type (its tolerances: tests/test_caption_search.cpp); a kind without a
// reduced-precision step refuses the type, naming it.
//
// The tolerances: the weights of these models are drawn at their initial
// scale, the logits span a few nats; int8's rounding of both operands (up to
// 1/254 of each row's largest element per element) moved the log-probabilities
// by at most 0.0034 (rnnsearch), 0.0009 (luong) and 0.0164 (the Transformer:
// 2 x 7 products per step in a row, and layer norms that scale errors up),
// bf16's (2^-9 relative) by 0.0011, 0.0003 and 0.0064 (measured 2026-11-27,
// the same for 3 and 20 rows); the bounds, 0.05 and 0.02, hold about 3x the largest.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/decode/search.h"
#include "attn/models/kinds.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/step_weight_types.h"
#include "attn/tensor/random.h"
#include "caption_run.h"
#include "fused_kinds.h"
#include "step_compare.h"
#include "reference_beam.h"

namespace attn::testing::compute_types_test {
namespace {

constexpr int64_t kVocab = kFusedVocab;
const auto& kConfigs = kFusedKindConfigs;

// The largest |log p_type - log p_fp32| over every token, row and step of a
// run of both decoders on the same rows and tokens (fp32's best each step).
double max_log_prob_gap(const models::Seq2SeqModel& m, nn::StepWeightType type, int64_t N) {
  NoGradGuard no_grad;
  const SourceBatch b = random_source_batch({6, 3, 5}, 6, 4, kVocab, 3);
  models::Encoded e = m.encode(b.src, b.lengths);
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < N; ++i) rows.push_back(i % 3);
  auto ref = m.decoder(e.memory, N, m.prepare_decoder(N, nn::StepWeightType::F32));
  auto dec = m.decoder(e.memory, N, m.prepare_decoder(N, type));
  return testing::max_log_prob_gap(*ref, *dec, models::select_rows(e.state, rows), rows, kVocab, 6,
                                   m.config().specials.bos);
}

TEST(ComputeTypes, Int8AndBf16LogProbsStayNearFp32ForEveryKind) {
  for (const char* json : kConfigs) {
    const auto m = make_fused_kind(json);
    for (int64_t N : {3, 20}) {  // fp32 row-major below 16 rows, packed from 16
      const double i8 = max_log_prob_gap(*m, nn::StepWeightType::I8, N);
      const double bf = max_log_prob_gap(*m, nn::StepWeightType::BF16, N);
      EXPECT_LE(i8, 0.05) << m->config().type << " rows " << N;
      EXPECT_LE(bf, 0.02) << m->config().type << " rows " << N;
      EXPECT_GT(i8, 0.0) << "int8 rounds: identical log-probabilities mean the type was not applied";
      EXPECT_GT(bf, 0.0) << "bf16 rounds: identical log-probabilities mean the type was not applied";
      RecordProperty(m->config().type + "_rows" + std::to_string(N), std::to_string(i8) + " " + std::to_string(bf));
    }
  }
}

// search() with SearchOptions::compute prepares its own weights in that type
TEST(ComputeTypes, GreedySearchInInt8MostlyPicksFp32sTokens) {
  for (const char* json : kConfigs) {
    const auto m = make_fused_kind(json);
    const SourceBatch b = random_source_batch({6, 3, 5, 4, 6, 2}, 6, 4, kVocab, 8);
    decode::SearchOptions o;
    o.alignments = false;
    const auto ref = decode::search(*m, b.src, b.lengths, o);
    o.compute = nn::StepWeightType::I8;
    const auto got = decode::search(*m, b.src, b.lengths, o);
    int64_t same = 0, total = 0;  // tokens of fp32's outputs that int8's repeat before its first difference
    for (size_t i = 0; i < ref.size(); ++i) {
      const auto &r = ref[i].hypotheses[0].tokens, &g = got[i].hypotheses[0].tokens;
      size_t t = 0;
      while (t < r.size() && t < g.size() && r[t] == g[t]) ++t;
      same += int64_t(t), total += int64_t(r.size());
    }
    EXPECT_GE(double(same), 0.8 * double(total)) << m->config().type;
  }
}

// A kind with no search step of its own: searches run the default stepwise
// decoder over step() (seq2seq.cpp), fp32 only. Never run, only asked.
class Fp32OnlyModel : public models::Seq2SeqModel {
public:
  Fp32OnlyModel() : Seq2SeqModel(config(), 0) {}
  models::Encoded encode(const Tensor&, const std::vector<int64_t>&) const override { throw std::logic_error("not run"); }
  models::StepOutput step(const models::EncoderMemory&, const models::DecoderState&, const Tensor&, int64_t,
                          models::StepDetail) const override {
    throw std::logic_error("not run");
  }
  Tensor forced_features(const data::Seq2SeqBatch&) const override { throw std::logic_error("not run"); }
  OutputLayer output_layer() const override { throw std::logic_error("not run"); }

private:
  static models::ModelConfig config() {
    models::ModelConfig c;
    c.type = "test_fp32_only";
    c.tgt_vocab = 8;
    return c;
  }
};

TEST(ComputeTypes, AKindWithoutAReducedPrecisionStepRefusesTheType) {
  Fp32OnlyModel m;
  m.train(false);
  EXPECT_EQ(m.prepare_decoder(4, nn::StepWeightType::F32), nullptr);
  EXPECT_TRUE(m.searches_in(nn::StepWeightType::F32));
  EXPECT_FALSE(m.searches_in(nn::StepWeightType::I8));
  EXPECT_FALSE(m.searches_in(nn::StepWeightType::BF16));
  for (const char* json : kConfigs) EXPECT_TRUE(make_fused_kind(json)->searches_in(nn::StepWeightType::BF16)) << json;
  for (const nn::StepWeightType type : {nn::StepWeightType::I8, nn::StepWeightType::BF16})
    try {
      (void)m.prepare_decoder(4, type);
      ADD_FAILURE() << nn::step_weight_kernels(type).name << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("test_fp32_only"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(nn::step_weight_kernels(type).name), std::string::npos) << e.what();
    }
}

// The captioner's search has its own fused step (show_attend_tell_search.h): every type
TEST(ComputeTypes, TheCaptionerPreparesEveryType) {
  Rng init(1);
  auto m = models::make_model(tiny_captioner_config(models::ImageAttention::Soft), init, 1);
  m->train(false);
  for (const nn::StepWeightType type : {nn::StepWeightType::F32, nn::StepWeightType::I8, nn::StepWeightType::BF16}) {
    EXPECT_TRUE(m->searches_in(type)) << nn::step_weight_kernels(type).name;
    EXPECT_NE(m->prepare_decoder(4, type), nullptr) << nn::step_weight_kernels(type).name;
  }
}

}  // namespace
}  // namespace attn::testing::compute_types_test
