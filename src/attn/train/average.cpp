#include "attn/train/average.h"

#include <stdexcept>

namespace attn::train {

SafetensorsFile average_model_files(const std::vector<std::string>& paths) {
  if (paths.empty()) throw std::invalid_argument("average: no model files given");
  SafetensorsFile sum = load_safetensors(paths[0]);
  // accumulate into private copies: the loaded tensors may share storage with the file buffer
  for (auto& [name, t] : sum.tensors) t = t.clone();
  const auto config_of = [](const SafetensorsFile& f) {
    auto it = f.metadata.find("config");
    return it == f.metadata.end() ? std::string() : it->second;
  };
  const std::string config = config_of(sum);
  for (size_t i = 1; i < paths.size(); ++i) {
    SafetensorsFile f = load_safetensors(paths[i]);
    if (config_of(f) != config)
      throw std::runtime_error(paths[i] + ": its model config differs from " + paths[0] + "'s");
    if (f.tensors.size() != sum.tensors.size())
      throw std::runtime_error(paths[i] + ": holds " + std::to_string(f.tensors.size()) + " tensors, " + paths[0] +
                               " holds " + std::to_string(sum.tensors.size()));
    for (auto& [name, acc] : sum.tensors) {
      if (!f.has(name)) throw std::runtime_error(paths[i] + ": has no tensor '" + name + "'");
      const Tensor& t = f.get(name);
      if (t.shape() != acc.shape())
        throw std::runtime_error(paths[i] + ": tensor '" + name + "' has shape " + t.shape().str() + ", " +
                                 paths[0] + " has " + acc.shape().str());
      float* a = acc.data();
      const float* b = t.data();
      const int64_t n = acc.numel();
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) a[k] += b[k];
    }
  }
  const float inv = 1.0f / float(paths.size());
  for (auto& [name, acc] : sum.tensors) {
    float* a = acc.data();
    const int64_t n = acc.numel();
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) a[k] *= inv;
  }
  return sum;
}

}  // namespace attn::train
