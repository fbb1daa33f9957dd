// Hostile model files (issue 14, item 3 and non-finite weights): each crafted
// file is refused with an error naming the file and what is wrong, never a
// crash, a huge allocation or a silently wrong model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/config/json_depth.h"
#include "attn/decode/model_dir.h"
#include "attn/models/config.h"
#include "attn/models/kinds.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"
#include "attn/nn/load_params.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/checkpoint.h"
#include "attn/train/mt_config.h"
#include "train_test_util.h"

namespace attn {
namespace {

// A safetensors file from a raw JSON header and `data_bytes` zero bytes of data.
std::string raw_safetensors(const std::string& header, size_t data_bytes) {
  uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + std::string(data_bytes, '\0');
}

// The error message load_safetensors gives for `bytes`, or "" when it loads.
std::string load_error(const std::string& path, const std::string& bytes) {
  testing::write_bytes(path, bytes);
  try {
    load_safetensors(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(HostileFiles, SafetensorsShapeWhoseByteSizeWrapsIsRefused) {
  testing::TempDir tmp("hostile_wrap");
  const std::string path = tmp.path + "/m.safetensors";
  // 2^62 elements * 4 bytes wraps to 0, matching the empty byte range.
  std::string err = load_error(path, raw_safetensors(
      R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0));
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("tensor 'w'"), std::string::npos) << err;
  EXPECT_NE(err.find("too large"), std::string::npos) << err;
  // A product of dimensions that wraps 64 bits on its own.
  err = load_error(path, raw_safetensors(
      R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})", 0));
  EXPECT_NE(err.find("more elements than fit in 64 bits"), std::string::npos) << err;
}

TEST(HostileFiles, SafetensorsRankAboveTheLimitIsRefused) {
  testing::TempDir tmp("hostile_rank");
  const std::string path = tmp.path + "/m.safetensors";
  std::string err = load_error(path, raw_safetensors(
      R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4));
  EXPECT_NE(err.find("tensor 'w': rank 7 exceeds the limit"), std::string::npos) << err;
}

TEST(HostileFiles, SafetensorsHeaderLengthAboveTheLimitIsRefused) {
  testing::TempDir tmp("hostile_header");
  const std::string path = tmp.path + "/m.safetensors";
  // A header length inside the file but above the limit: a sparse 101 MiB file.
  uint64_t big = uint64_t(101) << 20;
  testing::write_bytes(path, std::string(reinterpret_cast<const char*>(&big), 8));
  std::filesystem::resize_file(path, big + 8);
  std::string err;
  try {
    load_safetensors(path);
  } catch (const std::runtime_error& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("header length 105906176 exceeds the limit"), std::string::npos) << err;
}

TEST(HostileFiles, SafetensorsOverlappingOrOutsideRangesAreRefused) {
  testing::TempDir tmp("hostile_ranges");
  const std::string path = tmp.path + "/m.safetensors";
  std::string err = load_error(path, raw_safetensors(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
      12));
  EXPECT_NE(err.find("does not start where the previous ends"), std::string::npos) << err;
  err = load_error(path, raw_safetensors(
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[18446744073709551600,0]}})", 16));
  EXPECT_NE(err.find("tensor 'a': byte range"), std::string::npos) << err;
  err = load_error(path, raw_safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8));
  EXPECT_NE(err.find("truncated: tensor 'a'"), std::string::npos) << err;
}

TEST(HostileFiles, NonFiniteWeightsAreRefusedNamingTheTensor) {
  testing::TempDir tmp("hostile_nan");
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::string path = tmp.path + "/m.safetensors";
    Tensor good = Tensor::zeros({2, 3}), poisoned = Tensor::zeros({4});
    poisoned.data()[3] = bad;
    save_safetensors(path, {{"good", good}, {"poisoned", poisoned}});
    SafetensorsFile f = load_safetensors(path);
    nn::NamedTensors params = {{"good", Tensor::zeros({2, 3})}, {"poisoned", Tensor::zeros({4})}};
    try {
      nn::load_into_params(f, params);
      FAIL() << "weights holding " << bad << " were loaded";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_NE(msg.find("tensor 'poisoned' holds a non-finite value"), std::string::npos) << msg;
      EXPECT_NE(msg.find("at element 3"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("'good'"), std::string::npos) << msg;
    }
    EXPECT_EQ(params[1].second.data()[3], 0.0f) << "nothing is copied when the file is refused";
  }
}

// A model file whose config claims sizes the file's few weights cannot hold.
std::string lying_model_error(const std::string& dir, int64_t vocab, int64_t width) {
  models::ModelConfig c = models::model_config("rnnsearch");
  c.src_vocab = c.tgt_vocab = vocab;
  models::RnnSearchConfig& r = c.section<models::RnnSearchConfig>();
  c.embed = r.encoder_hidden = r.attention = r.readout = width;
  r.decoder_hidden = 2 * width;
  save_safetensors(dir + "/model.safetensors", {{"w", Tensor::zeros({16})}}, {{"config", models::to_json(c)}});
  try {
    decode::load_translation_model(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(HostileFiles, LyingModelConfigIsRefusedBeforeAllocating) {
  testing::TempDir tmp("hostile_config");
  // Within every per-size limit, but 2^22 * 2^14 embedding weights (256 GiB) from a 64-byte file.
  std::string err = lying_model_error(tmp.path, int64_t(1) << 22, int64_t(1) << 14);
  EXPECT_NE(err.find(tmp.path + "/model.safetensors: the model config implies at least"), std::string::npos) << err;
  EXPECT_NE(err.find("the file holds 16"), std::string::npos) << err;
  // Sizes above the limits are refused by validate, naming the field.
  err = lying_model_error(tmp.path, 4294967301, 32);
  EXPECT_NE(err.find("vocabulary size above the limit"), std::string::npos) << err;
  err = lying_model_error(tmp.path, 100, int64_t(1) << 20);
  EXPECT_NE(err.find("embed = 1048576 above the limit"), std::string::npos) << err;
}

// The error parse_train_config gives for `yaml`, or "" when it parses.
std::string config_error(const std::string& yaml) {
  try {
    train::parse_train_config(yaml, {}, "run.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const char* kData = "data:\n  train_src: a\n  train_tgt: b\n  valid_src: c\n  valid_tgt: d\n";

TEST(HostileConfigs, DuplicateKeyOrSectionIsRefusedWithItsLine) {
  std::string err = config_error(std::string(kData) + "vocab:\n  size: 80\n  size: 90\n");
  EXPECT_NE(err.find("run.yaml: line 8: duplicate key 'size'"), std::string::npos) << err;
  err = config_error(std::string(kData) + "vocab:\n  size: 80\nvocab:\n  size: 90\n");
  EXPECT_NE(err.find("run.yaml: line 8: duplicate key 'vocab'"), std::string::npos) << err;
  EXPECT_EQ(config_error(std::string(kData) + "vocab:\n  size: 80\ntrain:\n  out_dir: o\n"), "");
}

TEST(HostileConfigs, VocabSizeThatWouldWrapIsRefused) {
  std::string err = config_error(std::string(kData) + "vocab:\n  size: 4294967301\n");
  EXPECT_NE(err.find("vocab.size: 4294967301 outside [5, 4194304]"), std::string::npos) << err;
}

// Found while fixing the caption files' deep nesting: nlohmann parses and frees
// any depth iteratively, but the trainer state reader copies "module_rngs" and
// dumps "extra", both recursive, so a trainer_state.json nesting one of them a
// million deep crashed `--resume` (SIGSEGV). The text's depth is checked before
// parsing. Loaded in a forked child (EXPECT_EXIT): a regression kills the
// child, not the test binary.
TEST(HostileFiles, DeeplyNestedTrainerStateIsRefusedNotCopied) {
  testing::TempDir tmp("hostile_deep_state");
  testing::TinyNet net(5, 4, 3, 1);
  train::CheckpointSave save;
  save.model = &net;
  train::save_checkpoint(tmp.path + "/ckpt", save);
  const std::string state_file = tmp.path + "/ckpt/trainer_state.json";
  const std::string state = testing::read_bytes(state_file);
  ASSERT_FALSE(config::nesting_beyond(state, 3).has_value()) << "attn writes at most 3 levels";
  for (const std::string key : {"\"module_rngs\": ", "\"extra\": "}) {
    const size_t at = state.find(key);
    ASSERT_NE(at, std::string::npos) << key << state;
    std::string deep;  // {"a": {"a": ... 0}}, an object as "extra" must be to reach its dump()
    for (int level = 0; level < 1000000; ++level) deep += "{\"a\": ";
    deep += "0" + std::string(1000000, '}') + ", \"was\": ";
    testing::write_bytes(state_file, state.substr(0, at + key.size()) + deep + state.substr(at + key.size()));
    EXPECT_EXIT(
        {
          try {
            train::load_checkpoint(tmp.path + "/ckpt", {&net, nullptr});
          } catch (const std::runtime_error& e) {
            std::fprintf(stderr, "%s\n", e.what());
          }
          std::_Exit(0);
        },
        ::testing::ExitedWithCode(0), "trainer_state.json: nested deeper than 16 levels at byte")
        << key;
  }
}

}  // namespace
}  // namespace attn
