// Fuzz target: the model config (models/config.*, read through
// config/object_reader.h), as found in a model file's metadata or config.json.
// A config that is read and validated must survive the round trip through
// to_json unchanged (a config we write must read back as itself).
#include <cstdlib>

#include "attn/models/config.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn::models;
  const std::string text(attn::fuzz::as_view(data, size));
  ModelConfig c;
  try {
    c = model_config_from_json(text, "config.json");
    validate(c);
    if (min_parameter_count(c) <= 0) std::abort();  // a valid model has weights
  } catch (const std::exception&) {
    return 0;  // refused with a message
  }
  const std::string once = to_json(c);
  const std::string twice = to_json(model_config_from_json(once, "round trip"));
  if (once != twice) std::abort();
  return 0;
}
