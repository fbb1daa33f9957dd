// Model files and checkpoint directories: bit-exact round trips, a reader
// independent of attn, every corruption named in the error, and resuming a
// run from a checkpoint giving the same parameters as not stopping.
#include <gtest/gtest.h>

#include <filesystem>

#include "attn/train/checkpoint.h"
#include "attn/train/clip_grad.h"
#include "oracle.h"
#include "train_test_util.h"

using namespace attn;
using namespace attn::testing;

namespace {

const char* kConfig = R"({"in": 5, "hidden": 4, "out": 3})";

// The message of the exception load_model throws ("(no exception)" if none).
std::string load_error(const std::string& path, nn::Module& m) {
  try {
    train::load_model(path, m);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no exception)";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

}  // namespace

TEST(Checkpoint, ModelRoundTripIsBitExact) {
  TempDir dir("ckpt_roundtrip");
  TinyNet a(5, 4, 3, 1), b(5, 4, 3, 2);
  a.norm->weight.data()[1] = 1.5f;  // LayerNorm starts at ones/zeros: make it distinguishable
  ASSERT_FALSE(params_bit_equal(a, b));
  std::string path = dir.path + "/model.safetensors";
  train::save_model(path, a, kConfig);
  EXPECT_EQ(train::load_model(path, b), kConfig);
  EXPECT_TRUE(params_bit_equal(a, b));
  EXPECT_EQ(read_bytes(dir.path + "/config.json"), std::string(kConfig) + "\n");
  SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.metadata.at("config"), kConfig);
  EXPECT_EQ(f.metadata.at("format"), "attn");
  ASSERT_EQ(f.tensors.size(), 6u);
  EXPECT_EQ(f.tensors[0].first, "fc1.weight");  // registration order
  EXPECT_THROW(train::save_model(path, a, "[1, 2]"), std::invalid_argument);
  EXPECT_THROW(train::save_model(path, a, "{not json"), std::invalid_argument);
}

// Debian has no python3-safetensors (apt-cache policy python3-safetensors
// finds nothing), so the file is read by tests/oracle/st_reread.py: a reader
// written from the format's specification with numpy only.
TEST(Checkpoint, ReadableByIndependentReader) {
  TempDir dir("ckpt_reader");
  TinyNet a(5, 4, 3, 7);
  std::string path = dir.path + "/model.safetensors";
  train::save_model(path, a, kConfig);
  SafetensorsFile back = run_oracle("st_reread.py", path);
  EXPECT_EQ(back.metadata.at("config"), kConfig);
  auto params = a.named_parameters();
  ASSERT_EQ(back.tensors.size(), params.size());
  for (auto& [name, p] : params) {
    ASSERT_TRUE(back.has(name)) << name;
    EXPECT_TRUE(bit_equal(back.get(name), p)) << name;
  }
}

TEST(Checkpoint, CorruptOrTruncatedFilesNameFileAndProblem) {
  TempDir dir("ckpt_corrupt");
  TinyNet a(5, 4, 3, 1), b(5, 4, 3, 2);
  std::string good = dir.path + "/good.safetensors", bad = dir.path + "/bad.safetensors";
  train::save_model(good, a, kConfig);
  const std::string bytes = read_bytes(good);
  uint64_t hn = 0;
  std::memcpy(&hn, bytes.data(), 8);
  ASSERT_GT(bytes.size(), 8 + hn + 16);
  TinyNet b_before(5, 4, 3, 2);

  struct Case {
    const char* what;
    std::string content;
    const char* expect;
  };
  std::string garbage_header = bytes;
  for (int i = 0; i < 12; ++i) garbage_header[8 + i] = '#';
  std::string huge_length = bytes;
  uint64_t huge = uint64_t(1) << 40;
  std::memcpy(huge_length.data(), &huge, 8);
  std::string f16 = bytes;
  f16.replace(f16.find("\"F32\""), 5, "\"F16\"");
  std::vector<Case> cases = {
      {"garbage in the header", garbage_header, "corrupt header (not JSON)"},
      {"header length past the end", huge_length, "header length 1099511627776 exceeds the file"},
      {"cut inside the header length", bytes.substr(0, 5), "truncated: 5 bytes"},
      {"cut inside the header", bytes.substr(0, 8 + hn / 2), "truncated or corrupt: header length"},
      {"cut inside the data", bytes.substr(0, bytes.size() - 7), "truncated: tensor 'fc2.bias' ends at byte"},
      {"cut at the end of the header", bytes.substr(0, 8 + hn), "truncated: tensor"},
      {"wrong dtype", f16, "tensor 'fc1.weight': dtype \"F16\", only F32, BF16 and I8 are supported"},
  };
  for (const Case& c : cases) {
    write_bytes(bad, c.content);
    std::string e = load_error(bad, b);
    EXPECT_HAS(e, bad) << " [" << c.what << "]";
    EXPECT_HAS(e, c.expect) << " [" << c.what << "]";
  }
  EXPECT_TRUE(params_bit_equal(b, b_before)) << "a failed load must not change the model";
  EXPECT_HAS(load_error(dir.path + "/absent.safetensors", b), "absent.safetensors: cannot open");
}

TEST(Checkpoint, NameAndShapeMismatchesNameTensorAndShapes) {
  TempDir dir("ckpt_mismatch");
  TinyNet a(5, 4, 3, 1);
  auto params = a.named_parameters();
  std::string path = dir.path + "/m.safetensors";

  // wrong shape: hidden 4 saved, hidden 6 expected
  train::save_model(path, a, kConfig);
  TinyNet wider(5, 6, 3, 2), wider_before(5, 6, 3, 2);
  std::string e = load_error(path, wider);
  EXPECT_HAS(e, path + ": cannot load");
  EXPECT_HAS(e, "tensor 'fc1.weight': expected shape [6, 5], found [4, 5]");
  EXPECT_HAS(e, "tensor 'fc2.weight': expected shape [3, 6], found [3, 4]");
  EXPECT_TRUE(params_bit_equal(wider, wider_before)) << "a failed load must not change the model";

  // missing tensor
  nn::NamedTensors fewer(params.begin(), params.end() - 1);
  save_safetensors(path, fewer);
  TinyNet b(5, 4, 3, 2);
  e = load_error(path, b);
  EXPECT_HAS(e, path);
  EXPECT_HAS(e, "missing tensor 'fc2.bias' (expected shape [3])");

  // unexpected tensor
  nn::NamedTensors more = params;
  more.emplace_back("decoder.extra", Tensor::zeros({2, 2}));
  save_safetensors(path, more);
  e = load_error(path, b);
  EXPECT_HAS(e, path);
  EXPECT_HAS(e, "unexpected tensor 'decoder.extra' (shape [2, 2])");
}

TEST(Checkpoint, DirectoryRoundTrip) {
  TempDir dir("ckpt_dir");
  TinyNet a(5, 4, 3, 1);
  train::Adam opt(a.named_parameters());
  Rng rng(3);
  for (auto& [n, p] : a.named_parameters()) p.impl()->grad = randn(p.shape(), rng).impl_ptr();
  opt.step();
  opt.set_lr(0.1 / 3);  // not representable in F32: must come back exactly
  train::CheckpointSave save;
  save.model = &a;
  save.config_json = kConfig;
  save.optimizer = &opt;
  save.trainer.step = 1;
  save.trainer.epoch = 2;
  save.trainer.data_position = 17;
  save.trainer.rng_state = rng.state();
  save.trainer.best_valid_score = 0.1 + 0.2;
  train::save_checkpoint(dir.path + "/ckpt", save);
  for (const char* f : {"model.safetensors", "config.json", "optimizer.safetensors", "trainer_state.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path + "/ckpt/" + f)) << f;
  // a leftover temporary file of a killed writer is ignored
  write_bytes(dir.path + "/ckpt/model.safetensors.tmp.99999", "partial garbage");

  TinyNet b(5, 4, 3, 2);
  train::Adam opt2(b.named_parameters());
  train::LoadedCheckpoint got = train::load_checkpoint(dir.path + "/ckpt", {&b, &opt2});
  EXPECT_TRUE(params_bit_equal(a, b));
  EXPECT_EQ(got.config_json, kConfig);
  EXPECT_EQ(got.trainer.step, 1);
  EXPECT_EQ(got.trainer.epoch, 2);
  EXPECT_EQ(got.trainer.data_position, 17);
  EXPECT_EQ(got.trainer.rng_state, rng.state());
  ASSERT_TRUE(got.trainer.best_valid_score.has_value());
  EXPECT_EQ(*got.trainer.best_valid_score, 0.1 + 0.2);
  EXPECT_EQ(opt2.lr(), 0.1 / 3);
  EXPECT_EQ(opt2.step_count(), 1);
  auto s1 = opt.state(), s2 = opt2.state();
  ASSERT_EQ(s1.size(), s2.size());
  for (size_t i = 0; i < s1.size(); ++i) {
    EXPECT_EQ(s1[i].first, s2[i].first);
    EXPECT_TRUE(bit_equal(s1[i].second, s2[i].second)) << s1[i].first;
  }

  // No best score yet round-trips as empty; no optimizer: no optimizer file needed.
  save.trainer.best_valid_score.reset();
  save.optimizer = nullptr;
  train::save_checkpoint(dir.path + "/weights_only", save);
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/weights_only/optimizer.safetensors"));
  got = train::load_checkpoint(dir.path + "/weights_only", {&b, nullptr});
  EXPECT_FALSE(got.trainer.best_valid_score.has_value());
  try {
    train::load_checkpoint(dir.path + "/weights_only", {&b, &opt2});
    ADD_FAILURE() << "loading an optimizer from a checkpoint without one must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_HAS(e.what(), "weights_only/optimizer.safetensors: cannot open");
  }
}

TEST(Checkpoint, DirectoryErrorsNameFileAndProblem) {
  TempDir dir("ckpt_dir_err");
  TinyNet a(5, 4, 3, 1);
  train::Adam adam(a.named_parameters());
  train::CheckpointSave save;
  save.model = &a;
  save.optimizer = &adam;
  train::save_checkpoint(dir.path + "/one", save);
  train::save_checkpoint(dir.path + "/two", save);

  auto error = [&](const std::string& d, train::CheckpointLoad into) -> std::string {
    try {
      train::load_checkpoint(d, into);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no exception)";
  };
  TinyNet b(5, 4, 3, 2), b_before(5, 4, 3, 2);
  // An SGD cannot take Adam's state.
  train::Sgd sgd(b.named_parameters());
  std::string e = error(dir.path + "/one", {&b, &sgd});
  EXPECT_HAS(e, "one/optimizer.safetensors: state of a adam optimizer, cannot load into sgd");
  // A save interrupted between files: model from one save, trainer state from another.
  std::filesystem::copy_file(dir.path + "/two/model.safetensors", dir.path + "/one/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  e = error(dir.path + "/one", {&b, nullptr});
  EXPECT_HAS(e, "one/model.safetensors: inconsistent checkpoint");
  EXPECT_HAS(e, "a save was interrupted");
  // Corrupt trainer state.
  write_bytes(dir.path + "/two/trainer_state.json", "{\"format\": \"attn-trainer-state\"");
  e = error(dir.path + "/two", {&b, nullptr});
  EXPECT_HAS(e, "two/trainer_state.json: not valid JSON");
  e = error(dir.path + "/missing", {&b, nullptr});
  EXPECT_HAS(e, "missing/trainer_state.json: cannot open");
  EXPECT_TRUE(params_bit_equal(b, b_before)) << "a failed load must not change the model";
}
