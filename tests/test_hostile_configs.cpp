// Hostile training configs (issue 14, item 3): every key of the YAML training
// config and of its model section given a wrong type, an out-of-range or an
// overflowing value is refused naming the key (and its line), a YAML syntax
// error is reported as one with its line, and all of it happens before any
// corpus is read: the corpora these configs name do not exist.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attn/train/mt_config.h"
#include "train_test_util.h"

namespace attn::testing::hostile_configs_test {
namespace {

// A valid config whose corpora do not exist: each section's keys, one per line.
struct Section {
  std::string name;
  std::vector<std::string> lines;
};
std::vector<Section> base_sections(const std::string& root) {
  const std::string d = root + "/no/such/";
  return {{"data", {"train_src: " + d + "train.en", "train_tgt: " + d + "train.fr", "valid_src: " + d + "valid.en",
                    "valid_tgt: " + d + "valid.fr"}},
          {"vocab", {"size: 80"}},
          {"model", {"decoder_init: mean"}},
          {"train", {"out_dir: " + d + "run"}}};
}

// The base config with "key: value" appended to `section`; *line is set to its 1-based line.
std::string config_with(const std::string& section, const std::string& key_value, int* line,
                        const std::string& root = "/attn-test-never-made") {
  std::string yaml;
  int n = 0;
  for (const Section& s : base_sections(root)) {
    yaml += s.name + ":\n";
    ++n;
    for (const std::string& l : s.lines) {
      yaml += "  " + l + "\n";
      ++n;
    }
    if (s.name == section) {
      yaml += "  " + key_value + "\n";
      *line = ++n;
    }
  }
  return yaml;
}

std::string error_of(const std::string& yaml) {
  try {
    train::parse_train_config(yaml, {}, "run.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

struct BadKey {
  const char* section;
  const char* key_value;  // "key: value" as written in the YAML
  const char* expect;     // in the message, besides the key's name
  bool has_line;          // a type or range error of one key: "line N:" too
};

const BadKey kBadKeys[] = {
    // model section (models/config.cpp): types, ranges, overflow, and validate() before any data
    {"model", "dropout: 1.5", "dropout 1.500000 outside [0, 1)", true},
    {"model", "dropout: -0.1", "outside [0, 1)", true},
    {"model", "dropout: nan", "model.dropout: expected a finite number, got \"nan\"", true},
    {"model", "dropout: 1e999", "model.dropout: expected a finite number", true},
    {"model", "embed: -3", "embed = -3 must be > 0", true},
    {"model", "encoder_hidden: 0", "encoder_hidden = 0 must be > 0", true},
    {"model", "decoder_hidden: 1000000", "decoder_hidden = 1000000 above the limit", true},
    {"model", "embed: 99999999999999999999", "model.embed: expected a whole number within", true},
    {"model", "embed: 2.5", "model.embed: expected a whole number", true},
    {"model", "attention: big", "model.attention: expected a whole number", true},
    {"model", "encoder_layers: 100", "encoder_layers = 100 above the limit of 64", true},
    {"model", "decoder_layers: 65", "decoder_layers = 65 above the limit of 64", true},
    {"model", "readout: 18446744073709551615", "model.readout: expected a whole number within", true},
    {"model", "type: gpt", "model.type: expected one of rnnsearch, luong", true},
    {"model", "bidirectional: yes", "model.bidirectional: expected true or false", true},
    {"model", "pad_id: 4294967296", "model.pad_id: 4294967296 outside [0, 4194304]", true},
    {"model", "window_half_width: -1", "window_half_width", true},
    {"model", "colour: 3", "model.colour: unknown key", true},
    // vocab
    {"vocab", "type: wordpiece", "vocab.type: expected one of unigram, bpe", true},
    {"vocab", "character_coverage: 1.5", "vocab.character_coverage: 1.5 outside [0, 1]", true},
    {"vocab", "character_coverage: 0", "vocab.character_coverage must be in (0, 1]", false},
    {"vocab", "joint: 1", "vocab.joint: expected true or false", true},
    // data
    {"data", "max_src_tokens: 0", "data.max_src_tokens: 0 outside [1,", true},
    {"data", "max_tgt_tokens: 1e300", "data.max_tgt_tokens: expected a whole number within", true},
    {"data", "max_ratio: -1", "data.max_ratio: -1 outside [0,", true},
    {"data", "casual_source_share: 2", "data.casual_source_share: 2 outside [0, 1]", true},
    {"data", "tsv_src_column: 4294967296", "data.tsv_src_column: 4294967296 outside [0,", true},
    {"data", "split_seed: -1", "data.split_seed: -1 outside [0,", true},
    {"data", "valid_holdout: -5", "data.valid_holdout: -5 outside [0,", true},
    {"data", "train_tsv: [a, b]", "data.train_tsv: expected a string", true},
    // train
    {"train", "lr: 0", "train.lr must be > 0", false},
    {"train", "lr: -1", "train.lr: -1 outside [0, 3.4e+38]", true},
    {"train", "lr: .inf", "train.lr: expected a finite number", true},
    {"train", "threads: -1", "train.threads: -1 outside [0, 4096]", true},
    {"train", "threads: 4294967297", "train.threads: 4294967297 outside [0, 4096]", true},
    {"train", "seed: -5", "train.seed: -5 outside [0,", true},
    {"train", "max_tokens: 0", "train.max_tokens: 0 outside [1,", true},
    {"train", "max_sentences: -1", "train.max_sentences: -1 outside [0,", true},
    {"train", "valid_beam: 0", "train.valid_beam: 0 outside [1, 256]", true},
    {"train", "valid_beam: 4294967297", "train.valid_beam: 4294967297 outside [1, 256]", true},
    {"train", "valid_batch_sentences: 0", "train.valid_batch_sentences: 0 outside [1,", true},
    {"train", "beta2: 1", "train.beta2 must be in [0, 1)", false},
    {"train", "weight_decay: -0.1", "train.weight_decay: -0.1 outside [0, 10]", true},
    {"train", "clip: -1", "train.clip: -1 outside [0,", true},
    {"train", "label_smoothing: 1", "train.label_smoothing must be in [0, 1)", false},
    {"train", "max_epochs: -1", "train.max_epochs: -1 outside [0,", true},
    {"train", "max_steps: 2.5", "train.max_steps: expected a whole number", true},
    {"train", "max_minutes: -3", "train.max_minutes: -3 outside [0,", true},
    {"train", "valid_every: -1", "train.valid_every: -1 outside [0,", true},
    {"train", "log_every: 0", "train.log_every: 0 outside [1,", true},
    {"train", "checkpoint_minutes: -1", "train.checkpoint_minutes: -1 outside [0,", true},
    {"train", "metric: loss", "train.metric: expected one of bleu, perplexity", true},
    {"train", "lr_decay: 0", "train.lr_decay must be in (0, 1]", false},
    {"train", "lr_decay: 2", "train.lr_decay: 2 outside [0, 1]", true},
    {"train", "lr_patience: -1", "train.lr_patience: -1 outside [0,", true},
    {"train", "min_lr: -1", "train.min_lr: -1 outside [0, 3.4e+38]", true},
    {"train", "early_stop: 99999999999999999999", "train.early_stop: expected a whole number within", true},
    {"train", "valid_bleu_sentences: -1", "train.valid_bleu_sentences: -1 outside [0,", true},
    {"train", "snapshots: 3", "train.snapshots: expected true or false", true},
    {"train", "learning_rate: 1", "train.learning_rate: unknown key", true},
};

TEST(HostileConfigs, EveryBadKeyIsNamedWithItsLine) {
  int line = 0;
  EXPECT_EQ(error_of(config_with("train", "lr: 0.001", &line)), "");  // the base with a good key parses
  for (const BadKey& b : kBadKeys) {
    const std::string err = error_of(config_with(b.section, b.key_value, &line));
    const std::string key = std::string(b.key_value).substr(0, std::string(b.key_value).find(':'));
    EXPECT_NE(err.find("run.yaml: "), std::string::npos) << b.key_value << ": " << err;
    EXPECT_NE(err.find(key), std::string::npos) << b.key_value << " does not name the key: " << err;
    EXPECT_NE(err.find(b.expect), std::string::npos) << b.key_value << ": " << err;
    if (b.has_line) EXPECT_NE(err.find("line " + std::to_string(line) + ":"), std::string::npos) << b.key_value << ": " << err;
  }
}

TEST(HostileConfigs, UnknownSectionIsNamedNotReportedAsAMissingOne) {
  const std::string err = error_of("modle:\n  embed: 32\ndata:\n  train_src: a\n");
  EXPECT_NE(err.find("config.modle: unknown key"), std::string::npos) << err;
  EXPECT_NE(err.find("line 1:"), std::string::npos) << err;
}

TEST(HostileConfigs, YamlSyntaxErrorIsReportedWithItsLine) {
  // an unclosed flow sequence on line 3, a tab-indented line, a stray mapping value
  struct Case {
    std::string yaml;
    int line;
  };
  const Case cases[] = {
      {"data:\n  train_src: a\n  train_tgt: [b, c\nvocab:\n  size: 80\n", 4},
      {"data:\n  train_src: a\n  train_tgt: b: c\n", 3},
      {"data:\n  train_src: {a: b\n", 3},
  };
  for (const Case& c : cases) {
    const std::string err = error_of(c.yaml);
    EXPECT_NE(err.find("run.yaml: YAML syntax error at line " + std::to_string(c.line) + ", column "), std::string::npos)
        << c.yaml << err;
    EXPECT_EQ(err.find("section missing"), std::string::npos) << err;
  }
  // a first line without "key:" is a YAML scalar, not a mapping: said so, not "data: section missing"
  const std::string err = error_of("data\n  train_src a\n");
  EXPECT_NE(err.find("not a YAML mapping of sections"), std::string::npos) << err;
}

// Through the command: the config error is what `attn train` reports although
// the corpora do not exist, and nothing is created.
TEST(HostileConfigs, AttnTrainReportsTheConfigBeforeReadingAnything) {
  TempDir dir("hostile_configs");
  int line = 0;
  const std::string yaml = config_with("model", "dropout: 1.5", &line, dir.path);
  const std::string cfg = dir.path + "/bad.yaml";
  write_bytes(cfg, yaml);
  CommandResult r = run_attn("train -c " + cfg, dir.path);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(cfg + ": line " + std::to_string(line) + ": model config: dropout 1.500000 outside [0, 1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("no/such"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/no")) << "the run directory was made";
  r = run_attn("train -c " + cfg + " --set model.dropout=0.1 --set model.embed=-4", dir.path);
  EXPECT_NE(r.err.find("embed = -4 must be > 0"), std::string::npos) << r.err;
  // with a good config the corpus is what fails
  r = run_attn("train -c " + cfg + " --set model.dropout=0.1", dir.path);
  EXPECT_NE(r.err.find("no/such/train.en"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn::testing::hostile_configs_test
