// `attn caption -m RUN IMAGE...`: the command's shape beside its `data` and
// `sheet` subcommands, and its refusals. (Captioning itself needs an image
// model: decode/captioner.h's plumbing is tested in test_captioner.cpp.)
#include <gtest/gtest.h>

#include "attn/data/toy_tasks.h"
#include "attn/data/vocab.h"
#include "attn/image/codec.h"
#include "attn/models/seq2seq.h"
#include "attn/train/checkpoint.h"
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
  models::ModelConfig m;
  m.src_vocab = m.tgt_vocab = 40;
  m.embed = m.encoder_hidden = m.attention = m.readout = 8;
  m.decoder_hidden = 16;
  Rng init(1);
  train::save_model(run + "/model.safetensors", *models::make_model(m, init, 0), models::to_json(m));
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
