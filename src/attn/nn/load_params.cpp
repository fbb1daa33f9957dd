// Parameters loaded by name from a safetensors file (see load_params.h).
#include "attn/nn/load_params.h"

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::nn {

void check_params(const SafetensorsFile& file, const NamedTensors& params) {
  constexpr size_t kMaxListed = 12;
  std::vector<std::string> problems;
  std::map<std::string, const Tensor*> in_file;
  for (const auto& [name, t] : file.tensors) in_file[name] = &t;
  std::set<std::string> expected;
  for (const auto& [name, p] : params) {
    expected.insert(name);
    auto it = in_file.find(name);
    if (it == in_file.end())
      problems.push_back("missing tensor '" + name + "' (expected shape " + p.shape().str() + ")");
    else if (it->second->shape() != p.shape())
      problems.push_back("tensor '" + name + "': expected shape " + p.shape().str() + ", found " +
                         it->second->shape().str());
  }
  for (const auto& [name, t] : file.tensors) {
    // NaN/Inf weights would decode to empty lines with exit 0: refuse them here.
    const float* v = t.data();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      if (!std::isfinite(v[i])) {
        problems.push_back("tensor '" + name + "' holds a non-finite value (" + std::to_string(v[i]) +
                           ") at element " + std::to_string(i));
        break;
      }
  }
  for (const auto& [name, t] : file.tensors)
    if (!expected.count(name))
      problems.push_back("unexpected tensor '" + name + "' (shape " + t.shape().str() + ") is not a parameter of the model");
  if (problems.empty()) return;
  std::string msg = file.path + ": cannot load: ";
  for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > kMaxListed) msg += "; and " + std::to_string(problems.size() - kMaxListed) + " more";
  throw std::runtime_error(msg);
}

void copy_params(const SafetensorsFile& file, const NamedTensors& params) {
  for (const auto& [name, p] : params) {
    Tensor dst = p;
    dst.copy_from(file.get(name));
  }
}

void load_into_params(const SafetensorsFile& file, const NamedTensors& params) {
  check_params(file, params);
  copy_params(file, params);
}

}  // namespace attn::nn
