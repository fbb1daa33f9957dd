// `attn caption -m RUN IMAGE...`: the command's shape beside its `data` and
// `sheet` subcommands, and its refusals. (Captioning itself needs an image
// model: decode/captioner.h's plumbing is tested in test_captioner.cpp.)
#include <gtest/gtest.h>

#include "attn/data/toy_tasks.h"
#include "attn/data/vocab.h"
#include "attn/image/codec.h"
#include "attn/models/kinds.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"
#include "attn/models/seq2seq.h"
#include "attn/train/checkpoint.h"
#include "caption_run.h"
#include "toy_run.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::TempDir;
using attn::testing::run_attn;
using attn::testing::CommandResult;

// An untrained rnnsearch run in `run` (vocabularies and model file): what `attn train` leaves.
void write_translation_run(const std::string& run) {
  std::filesystem::create_directories(run);
  const data::ParallelCorpus c = data::reversal_corpus(200, 1);
  data::VocabTrainOptions v;
  v.vocab_size = 40;
  data::SubwordVocab::train({&c.src}, run + "/vocab.src.model", v);
  data::SubwordVocab::train({&c.tgt}, run + "/vocab.tgt.model", v);
  models::ModelConfig m = models::model_config("rnnsearch");
  m.src_vocab = m.tgt_vocab = 40;
  models::RnnSearchConfig& r = m.section<models::RnnSearchConfig>();
  m.embed = r.encoder_hidden = r.attention = r.readout = 8;
  r.decoder_hidden = 16;
  Rng init(1);
  train::save_model(run + "/model.safetensors", *models::make_model(m, init, 0), models::to_json(m));
}

// An untrained captioner's run in `run` (tests/caption_run.h's tiny captioner:
// 8 x 8 pixels, a 2 x 2 grid; 40 pieces): its captions are noise, but every
// command reads it as a trained one.
void write_caption_run(const std::string& run) {
  std::filesystem::create_directories(run);
  const data::ParallelCorpus c = data::reversal_corpus(200, 1);
  data::VocabTrainOptions v;
  v.vocab_size = 40;
  data::SubwordVocab::train({&c.tgt}, run + "/vocab.tgt.model", v);
  models::ModelConfig m = testing::tiny_captioner_config(models::ImageAttention::Soft);
  m.tgt_vocab = 40;
  Rng init(1);
  train::save_model(run + "/model.safetensors", *models::make_model(m, init, 0), models::to_json(m));
}

// Found by a tester: `--attention` over a picture smaller than the attention
// grid said "image attention: grid 2x2 must be ... at most the picture's 1x1"
// without the file's name (the same image captions without --attention).
TEST(CaptionCommand, AttentionOverATooSmallImageNamesTheFile) {
  TempDir dir("caption_command_small");
  write_caption_run(dir.path + "/run");
  const std::string tiny = dir.path + "/one_px.png";
  image::write_png(tiny, image::Image(1, 1, 0.5f), false);
  const std::string base = "caption -m " + dir.path + "/run --max-words 3 " + tiny;
  CommandResult r = run_attn(base, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_NE(r.out.find(tiny + "\t"), std::string::npos) << r.out;
  ASSERT_NE(r.out, tiny + "\t\n") << "an empty caption draws no overlay: the case is not reached";
  r = run_attn(base + " --attention " + dir.path + "/att", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(tiny + ": --attention: image attention: grid 2x2"), std::string::npos) << r.err;
}

// Found by a tester: an empty line of image paths on stdin said "attn: : cannot
// open". It is refused naming the line, as an empty line of text is in text mode.
TEST(CaptionCommand, ExplainNamesAnEmptyImagePathLine) {
  TempDir dir("caption_command_explain_empty");
  write_caption_run(dir.path + "/run");
  const std::string scene = dir.path + "/scene.png";
  image::write_png(scene, image::Image(8, 8, 0.5f), false);
  const CommandResult r = run_attn("explain -m " + dir.path + "/run", dir.path, scene + "\n\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("stdin:2: image path: empty (expected a PNG or JPEG file)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("caption"), std::string::npos) << "line 1 was explained first: " << r.out;
}

TEST(CaptionCommand, NeedsARunAndImagesOrASubcommand) {
  TempDir dir("caption_command_args");
  CommandResult r = run_attn("caption", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("give -m RUN and one or more IMAGE files, or a subcommand (eval, data, sheet)"), std::string::npos)
      << r.err;
  r = run_attn("caption -m " + dir.path + "/none", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("one or more IMAGE"), std::string::npos) << r.err;
  r = run_attn("caption -m " + dir.path + "/none a.png", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/none/model.safetensors: no model file"), std::string::npos) << r.err;
  r = run_attn("caption -m " + dir.path + "/none a.png --beam 0", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--beam"), std::string::npos) << r.err;
  // the subcommands are still subcommands, not image files
  r = run_attn("caption data --out " + dir.path + "/set --count 3 --seed 1", dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/set/dataset_shapes.json"));
}

TEST(CaptionCommand, RefusesATranslationRunNamingItsModel) {
  TempDir dir("caption_command_text_run");
  write_translation_run(dir.path + "/run");
  image::write_png(dir.path + "/a.png", image::Image(8, 8, 0.5f), false);
  const CommandResult r = run_attn("caption -m " + dir.path + "/run " + dir.path + "/a.png", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/run: its model is rnnsearch, a translation model that reads text"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace attn
