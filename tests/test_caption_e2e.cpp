// The captioning run end to end: `attn train -c` on generated scenes picks the
// caption task from the model type, trains the captioner with the one trainer
// and learns (the loss falls clearly, validation decodes captions); configs
// that mix captioning and translation are refused by name; the image cache
// gives what image/input.h gives.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/autograd/node.h"
#include "attn/data/caption_corpus.h"
#include "attn/decode/model_dir.h"
#include "attn/decode/search.h"
#include "attn/train/caption_task.h"
#include "attn/data/line_reader.h"
#include "attn/image/image_cache.h"
#include "attn/image/input.h"
#include "attn/train/mt_config.h"
#include "caption_run.h"
#include "train_test_util.h"

namespace attn::testing::caption_e2e_test {
namespace {

std::vector<nlohmann::json> records(const std::string& run, const std::string& type) {
  std::vector<nlohmann::json> v;
  for (const auto& line : data::read_lines(run + "/log.jsonl")) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == type) v.push_back(j);
  }
  return v;
}

// 150 scenes (120 training images, 480 captions), 150 steps of soft attention
// through the command: the training loss of the last 10 steps is below half of
// the first 10's, and every validation decodes the 15 validation images.
TEST(CaptionE2E, SoftAttentionLearnsGeneratedScenes) {
  TempDir dir("caption_e2e");
  const std::string json = write_scenes(dir.path + "/scenes", 150, 7);
  const std::string cfg = dir.path + "/run.yaml", out = dir.path + "/run";
  data::write_lines(cfg, {caption_config(json, out,
                                         "  max_steps: 150\n  max_epochs: 0\n  valid_every: 75\n  log_every: 10\n"
                                         "  threads: 2\n  seed: 2\n",
                                         toy_captioner("soft") + "  dropout: 0\n")});
  const CommandResult r = run_attn("train -c " + cfg, dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("training show_attend_tell"), std::string::npos) << r.out;
  const auto progress = records(out, "train");
  ASSERT_GE(progress.size(), 10u);
  const double first = progress.front()["loss"].get<double>(), last = progress.back()["loss"].get<double>();
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
  const auto valid = records(out, "valid");
  ASSERT_EQ(valid.size(), 2u);
  EXPECT_LT(valid.back()["perplexity"].get<double>(), valid.front()["perplexity"].get<double>());
  EXPECT_TRUE(valid.back().contains("exact_match"));
  EXPECT_GT(valid.back()["bleu"].get<double>(), 0.0);
  // the run directory loads for decoding (no source vocabulary), not as a translation model
  const decode::TranslationModel tm = decode::load_model_dir(out);
  EXPECT_EQ(tm.src_vocab, nullptr);
  EXPECT_EQ(tm.model->config().type, "show_attend_tell");
  EXPECT_THROW(decode::load_translation_model(out), std::runtime_error);
  // and the searches caption images with it unchanged
  const data::CaptionCorpus corpus = data::read_caption_corpus(json, dir.path + "/scenes");
  const Tensor img = image::load_input(corpus.images[0].path, 32, 32, train::caption_normalization());
  const Tensor batch = reshape(img, {1, 3, 32, 32});
  decode::SearchOptions so;
  so.max_len_ratio = 0;
  so.max_len_offset = 30;
  NoGradGuard ng;
  const auto greedy = decode::greedy_search(*tm.model, batch, {16}, so);
  ASSERT_EQ(greedy.size(), 1u);
  EXPECT_FALSE(greedy[0].hypotheses[0].tokens.empty());
  const decode::Hypothesis& h = greedy[0].hypotheses[0];
  EXPECT_EQ(h.attention.size(), (h.tokens.size() + (h.finished ? 1 : 0)) * 16);  // [steps, 16 cells]
  so.beam = 3;
  const auto beam = decode::beam_search(*tm.model, batch, {16}, so);
  ASSERT_EQ(beam.size(), 1u);
  EXPECT_FALSE(beam[0].hypotheses[0].tokens.empty());
  // `attn caption eval` scores the test split: a line for all 15 images, then one per object count
  const CommandResult ev = run_attn("caption eval -m " + out + " --captions " + json + " --threads 2", dir.path);
  ASSERT_EQ(ev.status, 0) << ev.err;
  std::vector<nlohmann::json> lines;
  std::istringstream out_lines(ev.out);
  for (std::string line; std::getline(out_lines, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_GE(lines.size(), 2u) << ev.out;
  EXPECT_EQ(lines[0]["subset"], "all");
  EXPECT_EQ(lines[0]["images"], 15);
  int64_t in_subsets = 0;
  for (size_t k = 1; k < lines.size(); ++k) in_subsets += lines[k]["images"].get<int64_t>();
  EXPECT_EQ(in_subsets, 15);
  // `attn explain` walks the caption of an image over the 4 x 4 grid: the caption `attn caption` prints
  const std::string image = corpus.images[0].path;
  const CommandResult cap = run_attn("caption -m " + out + " " + image, dir.path);
  ASSERT_EQ(cap.status, 0) << cap.err;
  const CommandResult ex = run_attn("explain -m " + out + " --format json " + image, dir.path);
  ASSERT_EQ(ex.status, 0) << ex.err;
  const nlohmann::json e = nlohmann::json::parse(ex.out);
  EXPECT_EQ(cap.out, image + "\t" + e["caption"].get<std::string>() + "\n");
  EXPECT_EQ(e["grid"], nlohmann::json::array({4, 4}));
  ASSERT_EQ(e["src_tokens"].size(), 16u);
  EXPECT_EQ(e["src_tokens"][6], "r1c2");
  ASSERT_FALSE(e["steps"].empty());
  for (const auto& st : e["steps"]) {
    ASSERT_EQ(st["weights"].size(), 16u);
    double total = 0;
    for (const auto& w : st["weights"]) total += w.get<double>();
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  const CommandResult table = run_attn("explain -m " + out + " --words " + image, dir.path);
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("caption: " + e["caption"].get<std::string>()), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("most weight: r"), std::string::npos) << table.out;
  const CommandResult heat = run_attn("explain -m " + out + " --heatmap h.png " + image, dir.path);
  EXPECT_EQ(heat.status, 1);
  EXPECT_NE(heat.err.find("--attention DIR"), std::string::npos) << heat.err;
  for (const auto& j : lines) {
    EXPECT_GE(j["exact_match"].get<double>(), 0.0);
    EXPECT_LE(j["exact_match"].get<double>(), 100.0);
    ASSERT_TRUE(j.contains("localisation")) << j.dump();  // the scenes have boxes
    EXPECT_LE(j["localised_words"].get<int64_t>(), j["named_words"].get<int64_t>());
  }
}

TEST(CaptionTask, ConfigsMixingCaptioningAndTranslationAreRefused) {
  auto refused = [](const std::string& yaml, const std::string& what) {
    try {
      train::parse_train_config(yaml);
      ADD_FAILURE() << "accepted:\n" << yaml;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // a captioner without captions, captions for a translation model, captions beside text files
  refused("data:\n  train_tsv: x.tsv\n  valid_holdout: 5\nmodel:\n" + toy_captioner("soft") + "train:\n  out_dir: o\n",
          "data.captions");
  refused("data:\n  captions: d.json\nmodel:\n  type: luong\ntrain:\n  out_dir: o\n", "show_attend_tell");
  refused("data:\n  captions: d.json\n  train_tsv: x.tsv\nmodel:\n" + toy_captioner("soft") + "train:\n  out_dir: o\n",
          "captions");
  refused("data:\n  captions: d.json\nmodel:\n  type: show_attend_tell\n  image_attention: sharp\ntrain:\n  out_dir: o\n",
          "image_attention");
  EXPECT_NO_THROW(train::parse_train_config("data:\n  captions: d.json\nmodel:\n" + toy_captioner("hard") +
                                            "train:\n  out_dir: o\n"));
}

// The byte cache's batch equals load_input's tensor up to the byte rounding.
TEST(CaptionTask, ImageCacheBatchMatchesLoadInput) {
  TempDir dir("caption_cache");
  const std::string json = write_scenes(dir.path, 10, 4);
  const data::CaptionCorpus corpus = data::read_caption_corpus(json, dir.path);
  std::vector<std::string> paths;
  for (const auto& img : corpus.images) paths.push_back(img.path);
  const image::ImageCache cache(paths, 16);
  const image::Normalization norm = image::imagenet_normalization();
  const Tensor b = cache.batch({3, 0}, norm);
  ASSERT_EQ(b.shape(), Shape({2, 3, 16, 16}));
  const Tensor direct = image::load_input(paths[3], 16, 16, norm);
  double worst = 0;
  for (int64_t i = 0; i < direct.numel(); ++i) worst = std::max(worst, double(std::abs(b.data()[i] - direct.data()[i])));
  EXPECT_LT(worst, 0.6 / 255 / 0.224);  // half a byte step over the smallest std
  EXPECT_GT(worst, 0.0);                 // (the cache does round to bytes)
  EXPECT_THROW(cache.batch({10}, norm), std::invalid_argument);
  EXPECT_THROW(image::ImageCache({dir.path + "/missing.png"}, 16), std::runtime_error);
}

}  // namespace
}  // namespace attn::testing::caption_e2e_test
