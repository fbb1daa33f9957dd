// Seeing a Transformer's attention: maps by layer and head
// (models/attention_maps.h: the names, --layer / --head, the titles), the
// encoder's self-attention computed on demand (Seq2SeqModel::
// encoder_attention), and the commands that show them (attn explain
// --layer / --head / --self-heatmap, attn translate --alignments --layer),
// on serve_test_util.h's tiny Transformer run (2 + 2 layers of 2 heads).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "attn/autograd/node.h"
#include "attn/data/toy_tasks.h"
#include "attn/decode/explain.h"
#include "attn/models/attention_maps.h"
#include "serve_test_util.h"
#include "train_test_util.h"

namespace attn::testing::explain_transformer_test {
namespace {

using nlohmann::json;

const std::vector<std::string> kCross = {"cross.layer3.mean", "cross.layer1.head1", "cross.layer1.head2",
                                         "cross.layer1.mean", "cross.layer2.head1", "cross.layer2.head2",
                                         "cross.layer2.mean", "cross.layer3.head1", "cross.layer3.head2"};

TEST(AttentionMapNames, LayeredNamesParseBack) {
  EXPECT_EQ(models::layered_map_name("cross", 3, 2), "cross.layer3.head2");
  EXPECT_EQ(models::layered_map_name("self", 1, 0), "self.layer1.mean");
  const auto m = models::parse_layered_map("self.layer12.head7");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->family, "self");
  EXPECT_EQ(m->layer, 12);
  EXPECT_EQ(m->head, 7);
  EXPECT_EQ(models::parse_layered_map("cross.layer2.mean")->head, 0);
  for (const char* bad : {"attention", "cross.layer.mean", "cross.layer0.mean", "cross.layer2.head0", "cross.layer2",
                          ".layer1.mean", "cross.layer2.head1.x", "cross.layerx.mean", "cross.layer2.heads"})
    EXPECT_FALSE(models::parse_layered_map(bad)) << bad;
  const models::MapGrid g = models::map_grid(kCross);
  EXPECT_EQ(g.family, "cross");
  EXPECT_EQ(g.layers, 3);
  EXPECT_EQ(g.heads, 2);
  EXPECT_EQ(models::map_grid({"attention"}).layers, 0);
}

// --layer / --head resolve to a name of the model's maps; out of range, both
// ways at once, or for maps without layers: an error naming the valid ranges.
TEST(AttentionMapNames, ChooseByLayerAndHead) {
  auto choose = [](const models::MapChoice& c) { return models::choose_map(kCross, c, "attention map"); };
  EXPECT_EQ(choose({}), "cross.layer3.mean");
  EXPECT_EQ(choose({.name = "cross.layer1.head2"}), "cross.layer1.head2");
  EXPECT_EQ(choose({.layer = 2}), "cross.layer2.mean");
  EXPECT_EQ(choose({.layer = 1, .head = "2"}), "cross.layer1.head2");
  EXPECT_EQ(choose({.head = "1"}), "cross.layer3.head1");
  EXPECT_EQ(choose({.layer = 2, .head = "mean"}), "cross.layer2.mean");
  const std::string ranges = "the model has layers 1-3 and heads 1-2 or mean (cross-attention)";
  EXPECT_EQ(invalid_argument_of([&] { choose({.layer = 4}); }), "--layer 4: outside the range; " + ranges);
  EXPECT_EQ(invalid_argument_of([&] { choose({.layer = 1, .head = "3"}); }), "--head 3: outside the range; " + ranges);
  EXPECT_EQ(invalid_argument_of([&] { choose({.head = "first"}); }), "--head \"first\": expects a head number (1, 2, ...) or mean");
  EXPECT_EQ(invalid_argument_of([&] { choose({.name = "cross.layer1.mean", .layer = 1}); }),
            "--attention-map and --layer / --head: give a map by name or by layer and head, not both");
  EXPECT_EQ(invalid_argument_of([] { models::choose_map({"attention"}, {.layer = 1}, "attention map"); }),
            "--layer / --head: the model's attention maps have no layers or heads (its maps: attention)");
  EXPECT_EQ(invalid_argument_of([] { models::choose_map({"self.layer1.mean"}, {.layer = 2}, "encoder attention map", "--self-"); }),
            "--self-layer 2: outside the range; the model has layers 1-1 and heads 1-0 or mean (encoder self-attention)");
  EXPECT_EQ(invalid_argument_of([&] { choose({.name = "cross.layer9.mean"}); }).rfind("unknown attention map \"cross.layer9.mean\"", 0),
            0u);
}

TEST(AttentionMapNames, Titles) {
  EXPECT_EQ(models::map_title(kCross, "cross.layer3.mean"), "cross-attention, layer 3, mean of 2 heads");
  EXPECT_EQ(models::map_title(kCross, "cross.layer1.head2"), "cross-attention, layer 1, head 2");
  EXPECT_EQ(models::map_title({"self.layer1.mean", "self.layer1.head1", "self.layer1.head2", "self.layer1.head3"},
                              "self.layer1.mean"),
            "encoder self-attention, layer 1, mean of 3 heads");
  EXPECT_EQ(models::map_title({"attention"}, "attention"), "attention");
}

const decode::TranslationModel& transformer() {
  static const decode::TranslationModel m = decode::load_translation_model(serve_transformer_run());
  return m;
}

// The encoder's self-attention: every row within the length a distribution,
// zeros past it, a layer's mean the mean of its heads, and a sentence's map the
// same alone and padded in a batch beside a longer one.
TEST(EncoderAttention, RowsAreDistributionsAndPaddingChangesNothing) {
  // an RNN model has none (trained first, if it is not yet: not under the NoGradGuard below)
  EXPECT_TRUE(serve_toy_model().model->encoder_attention_maps().empty());
  EXPECT_EQ(invalid_argument_of([] { models::resolve_encoder_map(*serve_toy_model().model, ""); }),
            "the model (rnnsearch) has no encoder self-attention maps");
  const models::Seq2SeqModel& m = *transformer().model;
  EXPECT_EQ(m.encoder_attention_maps().front(), "self.layer2.mean");
  NoGradGuard no_grad;
  const std::vector<int> a = transformer().src_vocab->encode(data::reversal_corpus(1, 61).src[0]);
  const int64_t La = int64_t(a.size()), S = La + 3;
  Tensor alone = Tensor::empty({1, La}), batch = Tensor::full({2, S}, float(m.config().specials.pad));
  for (int64_t j = 0; j < La; ++j) alone.data()[j] = batch.data()[S + j] = float(a[size_t(j)]);
  for (int64_t j = 0; j < S; ++j) batch.data()[j] = float(a[size_t(j % La)]);  // a longer first sentence
  for (const std::string& name : m.encoder_attention_maps()) {
    SCOPED_TRACE(name);
    const Tensor one = m.encoder_attention(alone, {La}, name);  // [1, La, La]
    const Tensor two = m.encoder_attention(batch, {S, La}, name);  // [2, S, S]
    ASSERT_EQ(one.shape(), Shape({1, La, La}));
    ASSERT_EQ(two.shape(), Shape({2, S, S}));
    for (int64_t i = 0; i < S; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        const float w = two.data()[(S + i) * S + j];
        if (i >= La || j >= La) EXPECT_EQ(w, 0.0f) << i << "," << j;
        else EXPECT_NEAR(w, one.data()[i * La + j], 1e-5) << i << "," << j;
        sum += w;
      }
      EXPECT_NEAR(sum, i < La ? 1.0 : 0.0, 1e-5) << "row " << i;
    }
  }
  const Tensor mean = m.encoder_attention(alone, {La}, "self.layer1.mean");
  const Tensor h1 = m.encoder_attention(alone, {La}, "self.layer1.head1");
  const Tensor h2 = m.encoder_attention(alone, {La}, "self.layer1.head2");
  for (int64_t k = 0; k < mean.numel(); ++k) EXPECT_NEAR(mean.data()[k], (h1.data()[k] + h2.data()[k]) / 2, 1e-6);
  EXPECT_EQ(invalid_argument_of([&] { m.encoder_attention(alone, {La}, "self.layer3.mean"); }).rfind(
                "unknown encoder attention map \"self.layer3.mean\"", 0),
            0u);
}

// attn explain --layer / --head is --attention-map by name; the JSON names the
// map and carries the encoder map --self-layer / --self-head name; both
// heatmaps are drawn; bad layers and heads, and a self-attention option for an
// RNN model, stop the command before any input is read.
TEST(ExplainTransformer, CommandByLayerAndHead) {
  TempDir dir("explain_transformer");
  const std::string& d = dir.path;
  const std::string model = " -m " + serve_transformer_run() + " --threads 1 --format json";
  const std::string text = data::reversal_corpus(1, 62).src[0] + "\n";
  const CommandResult by_name = run_attn("explain" + model + " --attention-map cross.layer1.head2", d, text);
  ASSERT_EQ(by_name.status, 0) << by_name.err;
  const CommandResult by_layer =
      run_attn("explain" + model + " --layer 1 --head 2 --self-layer 1 --self-head mean --heatmap " + d +
                   "/cross.png --self-heatmap " + d + "/self.svg",
               d, text);
  ASSERT_EQ(by_layer.status, 0) << by_layer.err;
  const json a = json::parse(by_name.out), b = json::parse(by_layer.out);
  EXPECT_EQ(a["attention_map"], "cross.layer1.head2");
  EXPECT_EQ(a["steps"], b["steps"]);
  EXPECT_EQ(a["self_attention"]["map"], "self.layer2.mean");  // the default
  EXPECT_EQ(b["self_attention"]["map"], "self.layer1.mean");
  const size_t S = b["src_tokens"].size();
  ASSERT_EQ(b["self_attention"]["weights"].size(), S);
  // the figures: titled by the map, the self-attention's labels the source pieces on both axes
  EXPECT_GT(std::filesystem::file_size(d + "/cross.png"), 0u);
  const std::string svg = read_bytes(d + "/self.svg");
  EXPECT_NE(svg.find("encoder self-attention, layer 1, mean of 2 heads"), std::string::npos);
  size_t cells = 0;
  for (size_t at = svg.find("class=\"cell\""); at != std::string::npos; at = svg.find("class=\"cell\"", at + 1)) ++cells;
  EXPECT_EQ(cells, S * S);

  const CommandResult table = run_attn("explain -m " + serve_transformer_run() + " --threads 1 --head 1", d, text);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("\nattention map: cross.layer2.head1 (encoder self-attention: self.layer2.mean,"),
            std::string::npos)
      << table.out;
  CommandResult r = run_attn("explain" + model + " --layer 3", d, text);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--layer 3: outside the range; the model has layers 1-2 and heads 1-2 or mean (cross-attention)"),
            std::string::npos)
      << r.err;
  r = run_attn("explain" + model + " --self-head 5", d, text);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--self-head 5: outside the range"), std::string::npos) << r.err;
  r = run_attn("explain -m " + serve_toy_run() + " --layer 1", d, "one two .\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("the model's attention maps have no layers or heads (its maps: attention)"), std::string::npos)
      << r.err;
  r = run_attn("explain -m " + serve_toy_run() + " --self-heatmap " + d + "/x.png", d, "one two .\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("the model (rnnsearch) has no encoder self-attention maps"), std::string::npos) << r.err;
}

// --words: the self-attention over words, a word's row the mean of its pieces'
// rows and a word's column the sum of its pieces' columns (rows still sum to 1).
TEST(ExplainTransformer, WordsMergeTheSelfAttention) {
  const std::string text = data::reversal_corpus(1, 64).src[0] + " zebra";  // an unseen word: several pieces
  decode::ExplainOptions o;
  const json pieces = decode::explain_text(transformer(), text, o);
  o.words = true;
  const json words = decode::explain_text(transformer(), text, o);
  const auto src = pieces["src_tokens"].get<std::vector<std::string>>();
  std::vector<size_t> word_of;  // piece -> word: a piece starting with U+2581 starts a word
  for (size_t i = 0; i < src.size(); ++i) {
    const bool starts_word = src[i].rfind("\xE2\x96\x81", 0) == 0;
    word_of.push_back(i == 0 ? 0 : word_of.back() + (starts_word ? 1 : 0));
  }
  const size_t W = word_of.back() + 1;
  ASSERT_LT(W, src.size()) << "no word of several pieces: the merge is not exercised";
  ASSERT_EQ(words["src_tokens"].size(), W);
  std::vector<double> want(W * W, 0.0), count(W, 0.0);
  for (size_t i = 0; i < src.size(); ++i) count[word_of[i]] += 1;
  for (size_t i = 0; i < src.size(); ++i)
    for (size_t j = 0; j < src.size(); ++j)
      want[word_of[i] * W + word_of[j]] += pieces["self_attention"]["weights"][i][j].get<double>() / count[word_of[i]];
  const json& got = words["self_attention"]["weights"];
  ASSERT_EQ(got.size(), W);
  for (size_t r = 0; r < W; ++r) {
    double sum = 0;
    for (size_t c = 0; c < W; ++c) {
      EXPECT_NEAR(got[r][c].get<double>(), want[r * W + c], 1e-6) << r << "," << c;
      sum += got[r][c].get<double>();
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  EXPECT_EQ(words["self_attention"]["map"], pieces["self_attention"]["map"]);
}

// attn translate --alignments soft --layer L --head H: the alignments of that map.
TEST(ExplainTransformer, TranslateAlignmentsByLayerAndHead) {
  TempDir dir("translate_transformer");
  const std::string& d = dir.path;
  const std::string model = " -m " + serve_transformer_run() + " --threads 1 -b 2 --alignments soft";
  const std::string text = data::reversal_corpus(1, 63).src[0] + "\n";
  const CommandResult by_name = run_attn("translate" + model + " --attention-map cross.layer2.head1", d, text);
  const CommandResult by_layer = run_attn("translate" + model + " --layer 2 --head 1", d, text);
  const CommandResult by_default = run_attn("translate" + model, d, text);
  ASSERT_EQ(by_name.status, 0) << by_name.err;
  ASSERT_EQ(by_layer.status, 0) << by_layer.err;
  ASSERT_EQ(by_default.status, 0) << by_default.err;
  EXPECT_EQ(by_name.out, by_layer.out);
  EXPECT_NE(by_name.out, by_default.out);  // the default is the last layer's mean, not a head
  const CommandResult mean = run_attn("translate" + model + " --layer 2", d, text);
  EXPECT_EQ(mean.out, by_default.out);
}

}  // namespace
}  // namespace attn::testing::explain_transformer_test
