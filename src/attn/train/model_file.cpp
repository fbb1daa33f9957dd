// Model weights as one safetensors file, with the config in its metadata.
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/config/object_reader.h"  // describe, parse_error_text
#include "attn/nn/load_params.h"
#include "attn/train/checkpoint.h"
#include "attn/train/checkpoint_detail.h"

namespace attn::train {

namespace detail {

void check_config_json(const std::string& config_json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("model config is not valid JSON: " + config::parse_error_text(e));
  }
  if (!j.is_object()) throw std::invalid_argument("model config must be a JSON object, got " + config::describe(j));
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

}  // namespace detail

void save_model(const std::string& path, const nn::Module& model, const std::string& config_json) {
  detail::write_model_file(path, model.named_parameters(), config_json, {});
}

std::string load_model(const std::string& path, nn::Module& model) {
  SafetensorsFile f = load_safetensors(path);
  nn::load_into_params(f, model.named_parameters());
  auto it = f.metadata.find("config");
  return it == f.metadata.end() ? "{}" : it->second;
}

}  // namespace attn::train
