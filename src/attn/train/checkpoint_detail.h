// Internal pieces shared by model_file.cpp and checkpoint.cpp; not a public API.
#pragma once
#include <map>
#include <string>

#include "attn/nn/module.h"
#include "attn/tensor/safetensors.h"

namespace attn::train::detail {

// Throws std::invalid_argument unless `config_json` parses as a JSON object.
void check_config_json(const std::string& config_json);

// Writes the model file (see checkpoint.h) with `extra` metadata added, and
// config.json beside it.
void write_model_file(const std::string& path, const nn::NamedTensors& params, const std::string& config_json,
                      const std::map<std::string, std::string>& extra);

// The folder part of `path` ("." when none).
std::string dirname(const std::string& path);

}  // namespace attn::train::detail
