// Attention maps by name (models/seq2seq.h: StepOutput::attention,
// Seq2SeqModel::attention_maps): a model that reports two maps, "a" and "b",
// and every consumer taking the one it is asked for and refusing an unknown
// name, listing the model's maps: the searches' alignments, explain, the
// server (a request's "attention_map", GET /health's list) and the commands'
// --attention-map.
//
// The model wraps the serve tests' trained toy rnnsearch: "a" is its own
// attention (with its internals), "b" each row's weights reversed over the
// row's source length (a distribution of its own, zeros past the length, and
// no internals), so every answer can be checked against "a" exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "attn/autograd/node.h"
#include "attn/decode/explain.h"
#include "attn/decode/search.h"
#include "attn/decode/translator.h"
#include "serve_test_util.h"
#include "train_test_util.h"

namespace attn::testing::attention_maps_test {
namespace {

using nlohmann::json;

class TwoMapModel : public models::Seq2SeqModel {
public:
  explicit TwoMapModel(std::unique_ptr<models::Seq2SeqModel> inner)
      : Seq2SeqModel(inner->config(), 0), inner_(std::move(inner)) {
    train(false);
  }

  std::vector<std::string> attention_maps() const override { return {"a", "b"}; }

  models::Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override {
    return inner_->encode(src, lengths);
  }

  // the inner step, its map as "a" (its internals describe "a", the default), and "b"
  models::StepOutput step(const models::EncoderMemory& memory, const models::DecoderState& state, const Tensor& prev,
                          int64_t t, models::StepDetail detail) const override {
    models::StepOutput out = inner_->step(memory, state, prev, t, detail);
    const Tensor a = *out.attention.find(models::kAttentionMap);
    out.attention.items.clear();
    out.attention.add("a", a);
    out.attention.add("b", reversed(a, memory.lengths()));
    return out;
  }
  // decoder(): the default one over step() (the inner model's fused step reports only its own map)

  Tensor forced_features(const data::Seq2SeqBatch&) const override { throw std::logic_error("not trained"); }
  OutputLayer output_layer() const override { return inner_->output_layer(); }

  // w [N, S], lengths [N] -> row i's first lengths[i] weights reversed, zeros after
  static Tensor reversed(const Tensor& w, const Tensor& lengths) {
    const int64_t N = w.size(0), S = w.size(1);
    Tensor out = Tensor::zeros({N, S});
    for (int64_t i = 0; i < N; ++i) {
      const int64_t L = int64_t(lengths.data()[i]);
      for (int64_t j = 0; j < L; ++j) out.data()[i * S + j] = w.data()[i * S + L - 1 - j];
    }
    return out;
  }

private:
  std::unique_ptr<models::Seq2SeqModel> inner_;
};

// The toy run loaded again, its model wrapped (the vocabularies are the run's).
const decode::TranslationModel& two_map_model() {
  static const decode::TranslationModel m = [] {
    decode::TranslationModel tm = decode::load_translation_model(serve_toy_run());
    tm.model = std::make_unique<TwoMapModel>(std::move(tm.model));
    return tm;
  }();
  return m;
}

// Hypothesis h's attention [steps, L] with each row reversed.
std::vector<float> rows_reversed(const std::vector<float>& a, size_t L) {
  std::vector<float> out(a.size());
  for (size_t r = 0; r * L < a.size(); ++r)
    for (size_t j = 0; j < L; ++j) out[r * L + j] = a[r * L + L - 1 - j];
  return out;
}

const std::vector<std::string> kTexts = {"d e f g", "a b c", "g f e d c b a"};

TEST(AttentionMaps, TheModelListsItsMapsDefaultFirst) {
  const models::Seq2SeqModel& m = *two_map_model().model;
  EXPECT_EQ(m.attention_maps(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(models::resolve_attention_map(m, ""), "a");
  EXPECT_EQ(models::resolve_attention_map(m, "b"), "b");
  try {
    models::resolve_attention_map(m, "c");
    FAIL() << "an unknown map was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown attention map \"c\" (the model's maps: a, b)");
  }
  EXPECT_EQ(serve_toy_model().model->attention_maps(), std::vector<std::string>{models::kAttentionMap});
}

// Greedy and beam search keep the map asked for; "" is the default, "a"; an
// unknown name is refused whether or not the search keeps alignments.
TEST(AttentionMaps, SearchAlignmentsAreTheNamedMap) {
  const decode::TranslationModel& tm = two_map_model();
  for (int beam : {1, 3}) {
    SCOPED_TRACE("beam " + std::to_string(beam));
    decode::TranslateOptions o;
    o.search.beam = beam;
    const auto by_default = decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, kTexts, o);
    o.search.attention_map = "a";
    const auto a = decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, kTexts, o);
    o.search.attention_map = "b";
    const auto b = decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, kTexts, o);
    // the plain model's fused step: its one map is "a"
    decode::TranslateOptions plain;
    plain.search.beam = beam;
    const auto own = decode::translate_lines(*serve_toy_model().model, *tm.src_vocab, *tm.tgt_vocab, kTexts, plain);
    for (size_t i = 0; i < kTexts.size(); ++i) {
      const decode::TranslatedHypothesis &d = by_default[i].hypotheses.at(0), &ha = a[i].hypotheses.at(0),
                                         &hb = b[i].hypotheses.at(0);
      ASSERT_FALSE(ha.attention.empty());
      EXPECT_EQ(ha.text, hb.text);  // the map does not change the search
      EXPECT_EQ(d.attention, ha.attention);
      EXPECT_NE(ha.attention, hb.attention);
      EXPECT_EQ(hb.attention, rows_reversed(ha.attention, a[i].src_pieces.size()));
      EXPECT_EQ(own[i].hypotheses.at(0).text, ha.text);
      ASSERT_EQ(own[i].hypotheses.at(0).attention.size(), ha.attention.size());
      for (size_t k = 0; k < ha.attention.size(); ++k)  // fused vs composable ops: rounding
        EXPECT_NEAR(own[i].hypotheses.at(0).attention[k], ha.attention[k], 1e-5);
    }
    for (bool alignments : {true, false}) {
      o.search.alignments = alignments;
      o.search.attention_map = "attention";  // the plain model's name is not this model's
      EXPECT_THROW(decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, kTexts, o), std::invalid_argument);
      o.search.attention_map = "b";  // and the plain model has no "b"
      EXPECT_THROW(decode::translate_lines(*serve_toy_model().model, *tm.src_vocab, *tm.tgt_vocab, kTexts, o),
                   std::invalid_argument);
    }
  }
}

// A fused decoder reports its one map, or none; another name is refused.
TEST(AttentionMaps, FusedDecodersReportTheirOneMapOrNone) {
  const models::Seq2SeqModel& m = *serve_toy_model().model;
  NoGradGuard no_grad;
  const std::vector<int> ids = serve_toy_model().src_vocab->encode("a b c");
  const int64_t S = int64_t(ids.size());
  models::Encoded e = m.encode(Tensor::from(std::vector<float>(ids.begin(), ids.end()), {1, S}), {S});
  auto dec = m.decoder(e.memory, 1);
  models::DecoderState st = dec->start(e.state, 1, 4);
  const std::vector<int> bos = {m.config().specials.bos};
  EXPECT_FALSE(dec->step({0}, st, bos, 1, 0).attention.defined());  // asked for none
  EXPECT_THROW(dec->report_attention("b"), std::invalid_argument);
  dec->report_attention(models::kAttentionMap);
  const models::StepTop& out = dec->step({0}, st, bos, 1, 1);
  ASSERT_TRUE(out.attention.defined());
  EXPECT_EQ(out.attention.shape(), Shape({1, S}));
}

// explain: the named map's weights; the internals are the default map's, so
// "b" (which has none) shows them null, and the words and text views cope.
TEST(AttentionMaps, ExplainShowsTheNamedMap) {
  const decode::TranslationModel& tm = two_map_model();
  decode::ExplainOptions o;
  const json plain = decode::explain_text(serve_toy_model(), kTexts[0], o);
  json by_default = decode::explain_text(tm, kTexts[0], o);
  EXPECT_EQ(plain.at("attention_map"), models::kAttentionMap);  // every explanation names its map
  EXPECT_EQ(by_default.at("attention_map"), "a");
  by_default["attention_map"] = models::kAttentionMap;
  EXPECT_EQ(by_default, plain);  // the default, "a", with its internals
  o.attention_map = "b";
  const json b = decode::explain_text(tm, kTexts[0], o);
  EXPECT_EQ(b.at("attention_map"), "b");
  const size_t L = b.at("src_tokens").size();
  ASSERT_EQ(b.at("steps").size(), plain.at("steps").size());
  for (size_t t = 0; t < b.at("steps").size(); ++t) {
    const json &sb = b["steps"][t], &sa = plain["steps"][t];
    EXPECT_EQ(sb.at("weights").get<std::vector<float>>(), rows_reversed(sa.at("weights").get<std::vector<float>>(), L));
    for (const char* f : {"query", "query_norm", "scores", "context_norm", "position", "window_range"})
      EXPECT_TRUE(sb.at(f).is_null()) << f;
    EXPECT_EQ(sb.at("top_k"), sa.at("top_k"));
    EXPECT_EQ(sb.at("chosen"), sa.at("chosen"));
  }
  EXPECT_NE(decode::explanation_table(b).find("query |q| = -  context |c| = -"), std::string::npos);
  o.words = true;
  const json words = decode::explain_text(tm, kTexts[0], o);
  for (const json& s : words.at("steps")) EXPECT_TRUE(s.at("scores").is_null());
  EXPECT_FALSE(decode::explanation_table(words).empty());
  o.attention_map = "attention";
  try {
    decode::explain_text(tm, kTexts[0], o);
    FAIL() << "an unknown map was explained";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(the model's maps: a, b)"), std::string::npos) << e.what();
  }
}

// The server: GET /health lists the maps; "attention_map" picks the one of a
// translation's weights and of an explanation; an unknown one is a 400 on the
// field, listing the maps.
TEST(AttentionMaps, TheServerTakesTheRequestsMap) {
  serve::ServerOptions so;
  so.threads = 1;
  so.explain = [](const json& r, const Tensor&) {
    decode::ExplainOptions eo;
    eo.attention_map = r.at("attention_map").get<std::string>();
    return decode::explain_text(two_map_model(), r.at("text").get<std::string>(), eo);
  };
  LiveServer s(two_map_model(), so);
  auto c = s.client();
  auto health = c->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(json::parse(health->body).at("attention_maps"), json::array({"a", "b"}));
  auto translate = [&](const json& body) { return c->Post("/v1/translate", body.dump(), "application/json"); };
  auto ra = translate({{"text", kTexts[2]}, {"alignments", true}});
  auto rb = translate({{"text", kTexts[2]}, {"alignments", true}, {"attention_map", "b"}});
  ASSERT_TRUE(ra && rb);
  ASSERT_EQ(ra->status, 200) << ra->body;
  ASSERT_EQ(rb->status, 200) << rb->body;
  const json ja = json::parse(ra->body), jb = json::parse(rb->body);
  const size_t L = ja.at("src_tokens").size();
  ASSERT_EQ(ja.at("weights").size(), jb.at("weights").size());
  for (size_t r = 0; r < ja["weights"].size(); ++r)
    EXPECT_EQ(jb["weights"][r].get<std::vector<float>>(),
              rows_reversed(ja["weights"][r].get<std::vector<float>>(), L));
  auto bad = translate({{"text", kTexts[2]}, {"attention_map", "attention"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  const json err = json::parse(bad->body);
  EXPECT_EQ(err.at("field"), "attention_map");
  EXPECT_NE(err.at("error").get<std::string>().find("(the model's maps: a, b)"), std::string::npos) << bad->body;
  auto ex = c->Post("/v1/explain", json{{"text", kTexts[0]}, {"attention_map", "b"}}.dump(), "application/json");
  ASSERT_TRUE(ex);
  ASSERT_EQ(ex->status, 200) << ex->body;
  EXPECT_TRUE(json::parse(ex->body).at("steps").at(0).at("scores").is_null());
  auto bad_ex = c->Post("/v1/explain", json{{"text", kTexts[0]}, {"attention_map", 3}}.dump(), "application/json");
  ASSERT_TRUE(bad_ex);
  EXPECT_EQ(bad_ex->status, 400);
}

// The commands: --attention-map names a map of the model; an unknown one
// stops the command (exit 1) before any input is read, listing the maps.
TEST(AttentionMaps, CommandsRefuseAnUnknownMap) {
  TempDir dir("attention_maps");
  const std::string run = serve_toy_run();
  for (const std::string cmd : {"translate", "explain"}) {
    const CommandResult ok = run_attn(cmd + " -m " + run + " --attention-map attention", dir.path, "a b c\n");
    EXPECT_EQ(ok.status, 0) << cmd << ": " << ok.err;
    const CommandResult bad = run_attn(cmd + " -m " + run + " --attention-map cross.layer2", dir.path, "a b c\n");
    EXPECT_EQ(bad.status, 1) << cmd;
    EXPECT_NE(bad.err.find("unknown attention map \"cross.layer2\" (the model's maps: attention)"), std::string::npos)
        << cmd << ": " << bad.err;
    EXPECT_TRUE(bad.out.empty()) << cmd;
  }
}

}  // namespace
}  // namespace attn::testing::attention_maps_test
