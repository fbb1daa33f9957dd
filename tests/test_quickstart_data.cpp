// The quick start's data and config (configs/tatoeba-en-fra.yaml on the
// bundled data/tatoeba-eng-fra/): the config loads, and its held-out
// validation and test splits share no English sentence with training or with
// each other. (The file's checksum is the ctest data.tatoeba-eng-fra.sha256.)
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>

#include "attn/data/split.h"
#include "attn/train/corpora.h"
#include "attn/train/mt_config.h"

using namespace attn;

namespace {

const std::string kRoot = std::string(ATTN_TEST_DIR) + "/..";

}  // namespace

TEST(QuickstartData, ConfigSplitsByEnglishSentenceWithoutLeaks) {
  train::TrainConfig cfg = train::load_train_config(kRoot + "/configs/tatoeba-en-fra.yaml");
  EXPECT_EQ(cfg.data.train_tsv, "data/tatoeba-eng-fra/fra.txt.gz");
  EXPECT_EQ(cfg.data.tsv_src_column, 0);  // English is the source
  EXPECT_EQ(cfg.train.out_dir, "runs/quickstart");
  ASSERT_GT(cfg.data.valid_holdout, 0);
  ASSERT_GT(cfg.data.test_holdout, 0);
  EXPECT_GT(cfg.train.max_minutes, 0);  // the quick start is time-boxed

  cfg.data.train_tsv = kRoot + "/" + cfg.data.train_tsv;  // paths in configs are relative to the project root
  const double casual_share = cfg.data.casual_source_share;
  cfg.data.casual_source_share = 0;  // the split alone first
  const train::Corpora c = train::read_corpora(cfg.data);
  EXPECT_EQ(c.train.size() + c.valid.size() + c.test.size(), 142787);
  // casual copies (data/augment.h) go to training only, on top of the split
  cfg.data.casual_source_share = casual_share;
  const train::Corpora with_casual = train::read_corpora(cfg.data);
  EXPECT_EQ(with_casual.valid.src, c.valid.src);
  EXPECT_EQ(with_casual.test.src, c.test.src);
  EXPECT_GE(with_casual.train.size(), c.train.size());
  EXPECT_LE(with_casual.train.size(), c.train.size() + int64_t(casual_share * double(c.train.size())));

  std::unordered_map<std::string, int> side;  // English sentence (split_key) -> 0 train, 1 valid, 2 test
  int64_t distinct[3] = {0, 0, 0}, leaks = 0;
  std::string first_leak;
  const data::ParallelCorpus* parts[] = {&c.train, &c.valid, &c.test};
  for (int p = 0; p < 3; ++p)
    for (const auto& en : parts[p]->src) {
      auto [it, inserted] = side.emplace(data::split_key(en), p);
      distinct[p] += inserted;
      if (it->second != p && leaks++ == 0) first_leak = en;
    }
  EXPECT_EQ(leaks, 0) << "first English sentence in two splits: \"" << first_leak << "\"";
  EXPECT_EQ(distinct[1], cfg.data.valid_holdout);
  EXPECT_EQ(distinct[2], cfg.data.test_holdout);
  EXPECT_GT(c.test.size(), cfg.data.test_holdout);  // held-out sentences keep all their translations
}
