// The translation training config: YAML sections, --set overrides, and errors
// that name the offending key.
#include <gtest/gtest.h>

#include <filesystem>

#include "attn/models/luong/luong_config.h"
#include "attn/train/mt_config.h"

namespace attn::testing::mt_config_test {
namespace {

const char* kBase = R"(
data:
  train_src: a.de
  train_tgt: a.en
  valid_holdout: 10
model:
  type: luong
  cell: lstm
  score: dot
  encoder_hidden: 128
  decoder_hidden: 256
train:
  out_dir: runs/x
  lr: 5e-4
)";

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    train::parse_train_config(yaml, sets, "cfg.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfig, ParsesSectionsAndOverrides) {
  train::TrainConfig c = train::parse_train_config(kBase, {"train.lr=0.003", "model.score=general", "vocab.size=500",
                                                           "train.metric=perplexity", "data.max_ratio=2",
                                                           "data.split_seed=7"});
  EXPECT_EQ(c.data.train_src, "a.de");
  EXPECT_EQ(c.data.valid_holdout, 10);
  EXPECT_EQ(c.model.type, "luong");
  EXPECT_EQ(c.model.section<models::LuongConfig>().cell, models::CellType::Lstm);
  EXPECT_EQ(c.model.section<models::LuongConfig>().score, models::LuongScore::General);
  EXPECT_EQ(c.model.section<models::LuongConfig>().decoder_hidden, 256);
  EXPECT_DOUBLE_EQ(c.train.lr, 0.003);
  EXPECT_EQ(c.train.metric, "perplexity");
  EXPECT_EQ(c.vocab.size, 500);
  EXPECT_DOUBLE_EQ(c.data.max_ratio, 2.0);
  EXPECT_EQ(c.data.split_seed, 7u);
  EXPECT_EQ(train::parse_train_config(kBase).data.split_seed, 1u);  // held-out sentences do not follow train.seed
  EXPECT_NE(train::to_json(c).find("\"lr\": 0.003"), std::string::npos) << train::to_json(c);
}

// The data-parallel fields (docs/distributed-training.md): read, written back, bounded.
TEST(TrainConfig, DataParallelFields) {
  const train::TrainConfig d = train::parse_train_config(kBase);
  EXPECT_DOUBLE_EQ(d.train.dist_timeout_s, 600);
  EXPECT_DOUBLE_EQ(d.train.dist_bucket_mb, 8);
  const train::TrainConfig c = train::parse_train_config(kBase, {"train.dist_timeout_s=30", "train.dist_bucket_mb=0.5"});
  EXPECT_DOUBLE_EQ(c.train.dist_timeout_s, 30);
  EXPECT_DOUBLE_EQ(c.train.dist_bucket_mb, 0.5);
  EXPECT_NE(train::to_json(c).find("\"dist_timeout_s\": 30"), std::string::npos) << train::to_json(c);
  EXPECT_NE(error_of(kBase, {"train.dist_timeout_s=0"}).find("dist_timeout_s"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"train.dist_bucket_mb=-1"}).find("dist_bucket_mb"), std::string::npos);
}

TEST(TrainConfig, ErrorsNameTheKey) {
  EXPECT_NE(error_of(kBase, {"train.learning_rate=1"}).find("train.learning_rate: unknown key"), std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "optimizer:\n  lr: 1\n").find("config.optimizer: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"model.embd=3"}).find("model.embd: unknown key"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"train.max_tokens=lots"}).find("train.max_tokens: expected a whole number"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"model.cell=rnn"}).find("model.cell: expected one of gru, lstm"), std::string::npos);
  EXPECT_EQ(error_of(kBase), "");
  // every message names the file
  EXPECT_EQ(error_of(kBase, {"train.lr=-1"}).rfind("cfg.yaml: ", 0), 0u);
  // data rules
  EXPECT_NE(error_of(kBase, {"data.train_tsv=x.tsv"}).find("either train_src and train_tgt, or train_tsv"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"data.valid_tsv=v.tsv"}).find("exactly one of"), std::string::npos);
  EXPECT_NE(error_of("model:\n  type: luong\n").find("data: section missing"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"train.out_dir="}).find("train.out_dir is required"), std::string::npos);
  EXPECT_NE(error_of("data: [1, 2"), "");  // not YAML
  EXPECT_NE(error_of(kBase, {"nokey"}).find("expected section.key=value"), std::string::npos);
}

}  // namespace
}  // namespace attn::testing::mt_config_test

// Every shipped config loads: a typo in a key or an enum value fails here, not an
// hour into a run.
TEST(TrainConfig, EveryShippedConfigLoads) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(ATTN_TEST_DIR) / ".." / "configs")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(attn::train::load_train_config(e.path().string()));
    ++n;
  }
  EXPECT_GE(n, 2);
}
