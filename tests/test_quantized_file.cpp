// Quantised model files (tensor/safetensors.h, `attn quantize`): I8 and BF16
// tensors read back as F32 within their rounding (I8: half a row's scale per
// element; BF16: to nearest even), 1-D tensors of an int8 file kept F32, the
// scales not listed; malformed scales refused naming the tensor; `attn
// quantize` writes a run every command reads, int8 at most 30% of the fp32 file,
// and refuses to overwrite its own run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>

#include "attn/data/toy_tasks.h"
#include "attn/tensor/random.h"
#include "attn/tensor/safetensors.h"
#include "serve_test_util.h"

namespace attn::testing::quantized_file_test {
namespace {

Tensor random_tensor(const Shape& s, Rng& rng) {
  Tensor t = Tensor::empty(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.normal();
  return t;
}

TEST(QuantizedFile, Int8AndBf16ReadBackWithinTheirRounding) {
  Rng rng(2);
  Tensor w = random_tensor({5, 7}, rng), b = random_tensor({5}, rng), z = Tensor::zeros({2, 3});
  w.data()[3] = 40.0f;  // an outlier in row 0
  const std::vector<std::pair<std::string, Tensor>> tensors = {{"w", w}, {"b", b}, {"z", z}};
  const SafetensorsFile i8 = parse_safetensors(encode_safetensors(tensors, {{"k", "v"}}, WeightFileType::I8), "i8");
  ASSERT_EQ(i8.tensors.size(), 3u);  // the scales are read with their tensors, not listed
  EXPECT_EQ(i8.metadata.at("k"), "v");
  for (int64_t r = 0; r < 5; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < 7; ++c) amax = std::max(amax, std::fabs(w.data()[r * 7 + c]));
    for (int64_t c = 0; c < 7; ++c)
      EXPECT_LE(std::fabs(i8.get("w").data()[r * 7 + c] - w.data()[r * 7 + c]), amax / 127 / 2 * 1.0001f) << r << "," << c;
  }
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(i8.get("b").data()[i], b.data()[i]);  // 1-D: kept F32
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(i8.get("z").data()[i], 0.0f);        // an all-zero row stays zero
  // a model-sized layer: int8 a quarter of fp32 and the scales (the 30% of issue 27 with room to spare)
  const std::vector<std::pair<std::string, Tensor>> layer = {{"w", random_tensor({256, 512}, rng)},
                                                              {"b", random_tensor({256}, rng)}};
  EXPECT_LE(double(encode_safetensors(layer, {}, WeightFileType::I8).size()),
            0.26 * double(encode_safetensors(layer, {}, WeightFileType::F32).size()));
  const SafetensorsFile bf = parse_safetensors(encode_safetensors(tensors, {}, WeightFileType::BF16), "bf16");
  for (int64_t i = 0; i < 35; ++i) {
    const float x = w.data()[i], y = bf.get("w").data()[i];
    EXPECT_LE(std::fabs(y - x), std::fabs(x) * std::ldexp(1.0f, -8)) << i;
    uint32_t u;
    std::memcpy(&u, &y, 4);
    EXPECT_EQ(u & 0xffffu, 0u) << "not a bfloat16 value";
  }
}

// a file whose header names `tensors` ({name, dtype, shape, bytes}) in order
std::string file_of(const std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, size_t>>& tensors) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  size_t off = 0;
  for (const auto& [name, dtype, shape, bytes] : tensors) {
    h[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string text = h.dump();
  const uint64_t n = text.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + text + std::string(off, '\0');
}

TEST(QuantizedFile, MalformedScalesAreRefusedNamingTheTensor) {
  auto refused = [](const std::string& bytes, const std::string& what) {
    try {
      parse_safetensors(bytes, "m.safetensors");
      ADD_FAILURE() << "accepted; expected: " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(file_of({{"w", "I8", {2, 3}, 6}}), "tensor 'w': I8 without its scales 'w:scale' (F32 [2])");
  refused(file_of({{"w", "I8", {2, 3}, 6}, {"w:scale", "F32", {3}, 12}}), "I8 without its scales");
  refused(file_of({{"b", "F32", {2}, 8}, {"b:scale", "F32", {2}, 8}}), "the scales of a tensor that is not I8");
  refused(file_of({{"w", "I8", {2, 3}, 12}}), "does not hold shape [2, 3] of I8");
  refused(file_of({{"w", "F16", {2}, 4}}), "only F32, BF16 and I8 are supported");
}

TEST(QuantizedFile, QuantizeWritesARunEveryCommandReads) {
  TempDir dir("quantize_run");
  namespace fs = std::filesystem;
  const std::string run = serve_transformer_run(), out = dir.path + "/int8";
  const CommandResult q = run_attn("quantize " + run + " -o " + out + " --type int8", dir.path, "");
  ASSERT_EQ(q.status, 0) << q.err;
  // the toy's matrices are small: its header (names, the config) and 1-D tensors weigh more than a real model's
  EXPECT_LE(fs::file_size(out + "/model.safetensors"), 0.40 * double(fs::file_size(run + "/model.safetensors")));
  EXPECT_EQ(load_safetensors(out + "/model.safetensors").metadata.at("weight_type"), "int8");
  std::string text;
  for (const std::string& s : data::reversal_corpus(8, 81).src) text += s + "\n";
  const CommandResult fp32 = run_attn("translate -m " + run + " --threads 1 -b 3", dir.path, text);
  const CommandResult i8 = run_attn("translate -m " + out + " --threads 1 -b 3 --compute int8", dir.path, text);
  ASSERT_EQ(i8.status, 0) << i8.err;
  // the int8 run translates as fp32 does but where the toy's two best tokens lie closer
  // than int8's rounding: none of the 8 on Zen 4, one on a Zen 3 (whose AVX2 kernels
  // train another toy). Not equal to quantising the fp32 file at load either: the file
  // rounds every matrix, the embeddings too, which a search keeps in fp32.
  auto lines = [](const std::string& t) {
    std::vector<std::string> v;
    std::istringstream in(t);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  };
  const std::vector<std::string> a = lines(i8.out), b = lines(fp32.out);
  ASSERT_EQ(a.size(), b.size()) << i8.out;
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_GE(same, int(a.size()) - 1) << "int8:\n" << i8.out << "fp32:\n" << fp32.out;
  const CommandResult bf = run_attn("quantize " + run + " -o " + dir.path + "/bf16 --type bf16", dir.path, "");
  ASSERT_EQ(bf.status, 0) << bf.err;
  EXPECT_EQ(run_attn("explain -m " + dir.path + "/bf16 --threads 1", dir.path, text.substr(0, text.find('\n') + 1)).status, 0);
  const CommandResult self = run_attn("quantize " + out + " -o " + out, dir.path, "");
  EXPECT_NE(self.status, 0);
  EXPECT_NE(self.err.find("is the run itself"), std::string::npos) << self.err;
}

}  // namespace
}  // namespace attn::testing::quantized_file_test
