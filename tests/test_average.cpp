// Checkpoint averaging: the mean of each tensor over the files, the first
// file's metadata kept, and every mismatch named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "attn/tensor/random.h"
#include "attn/train/average.h"

using namespace attn;

namespace {

std::string tmp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("attn_average_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string error_of(const std::vector<std::string>& paths) {
  try {
    train::average_model_files(paths);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST(Average, IsTheElementwiseMeanWithTheFirstFilesMetadata) {
  Rng rng(7);
  std::vector<std::string> paths;
  std::vector<Tensor> ws, bs;
  for (int i = 0; i < 3; ++i) {
    ws.push_back(randn({4, 5}, rng));
    bs.push_back(randn({5}, rng));
    paths.push_back(tmp_path("m" + std::to_string(i) + ".safetensors"));
    save_safetensors(paths.back(), {{"w", ws.back()}, {"b", bs.back()}}, {{"config", "{\"h\":4}"}});
  }
  SafetensorsFile avg = train::average_model_files(paths);
  ASSERT_EQ(avg.tensors.size(), 2u);
  EXPECT_EQ(avg.tensors[0].first, "w");  // the first file's order
  EXPECT_EQ(avg.metadata.at("config"), "{\"h\":4}");
  for (int64_t k = 0; k < 20; ++k)
    EXPECT_NEAR(avg.get("w").data()[k], (ws[0].data()[k] + ws[1].data()[k] + ws[2].data()[k]) / 3, 1e-6);
  for (int64_t k = 0; k < 5; ++k)
    EXPECT_NEAR(avg.get("b").data()[k], (bs[0].data()[k] + bs[1].data()[k] + bs[2].data()[k]) / 3, 1e-6);
  // averaging one file gives it back; the inputs were not modified by accumulating into the first
  SafetensorsFile one = train::average_model_files({paths[0]});
  for (int64_t k = 0; k < 20; ++k) EXPECT_EQ(one.get("w").data()[k], ws[0].data()[k]);
}

TEST(Average, MismatchesNameTheFileAndTensor) {
  Rng rng(8);
  const std::string a = tmp_path("a.safetensors"), shape = tmp_path("shape.safetensors"),
                    name = tmp_path("name.safetensors"), cfg = tmp_path("cfg.safetensors");
  save_safetensors(a, {{"w", randn({2, 3}, rng)}}, {{"config", "{}"}});
  save_safetensors(shape, {{"w", randn({3, 2}, rng)}}, {{"config", "{}"}});
  save_safetensors(name, {{"v", randn({2, 3}, rng)}}, {{"config", "{}"}});
  save_safetensors(cfg, {{"w", randn({2, 3}, rng)}}, {{"config", "{\"other\":1}"}});
  std::string e = error_of({a, shape});
  EXPECT_NE(e.find(shape + ": tensor 'w' has shape [3, 2]"), std::string::npos) << e;
  e = error_of({a, name});
  EXPECT_NE(e.find(name + ": has no tensor 'w'"), std::string::npos) << e;
  e = error_of({a, cfg});
  EXPECT_NE(e.find(cfg + ": its model config differs"), std::string::npos) << e;
  EXPECT_NE(error_of({}).find("no model files"), std::string::npos);
}
