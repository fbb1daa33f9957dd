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

// The checks of load_into_params without the copy: throws on any mismatch.
void check_params(const SafetensorsFile& file, const nn::NamedTensors& params);
// The copy, after check_params passed.
void copy_params(const SafetensorsFile& file, const nn::NamedTensors& params);

// The folder part of `path` ("." when none).
std::string dirname(const std::string& path);

}  // namespace attn::train::detail
