// Model weights as one safetensors file, with the config in its metadata.
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "attn/train/checkpoint.h"
#include "attn/train/checkpoint_detail.h"

namespace attn::train {

namespace detail {

void check_config_json(const std::string& config_json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config_json);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("model config is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("model config must be a JSON object, got: " + config_json);
}

std::string dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void write_model_file(const std::string& path, const nn::NamedTensors& params, const std::string& config_json,
                      const std::map<std::string, std::string>& extra) {
  check_config_json(config_json);
  std::map<std::string, std::string> meta = extra;
  meta["format"] = "attn";
  meta["config"] = config_json;
  save_safetensors(path, params, meta);
  write_file_atomic(dirname(path) + "/config.json", config_json + "\n");
}

void check_params(const SafetensorsFile& file, const nn::NamedTensors& params) {
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
  for (const auto& [name, t] : file.tensors)
    if (!expected.count(name))
      problems.push_back("unexpected tensor '" + name + "' (shape " + t.shape().str() + ") is not a parameter of the model");
  if (problems.empty()) return;
  std::string msg = file.path + ": cannot load: ";
  for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > kMaxListed) msg += "; and " + std::to_string(problems.size() - kMaxListed) + " more";
  throw std::runtime_error(msg);
}

void copy_params(const SafetensorsFile& file, const nn::NamedTensors& params) {
  for (const auto& [name, p] : params) {
    Tensor dst = p;
    dst.copy_from(file.get(name));
  }
}

}  // namespace detail

void save_model(const std::string& path, const nn::Module& model, const std::string& config_json) {
  detail::write_model_file(path, model.named_parameters(), config_json, {});
}

void load_into_params(const SafetensorsFile& file, const nn::NamedTensors& params) {
  detail::check_params(file, params);
  detail::copy_params(file, params);
}

std::string load_model(const std::string& path, nn::Module& model) {
  SafetensorsFile f = load_safetensors(path);
  load_into_params(f, model.named_parameters());
  auto it = f.metadata.find("config");
  return it == f.metadata.end() ? "{}" : it->second;
}

}  // namespace attn::train
