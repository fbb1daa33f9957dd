// Fuzz target: the model config (models/config.*, read through
// config/object_reader.h), as found in a model file's metadata or config.json.
//
// Properties of a config that is read and validated: every number the input
// gives is kept exactly, unless its kind ignores the key (a legacy key of another kind) (no silent wrap or rounding: compared with the
// config's own to_json), and to_json reads back as the same config.
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "attn/models/config.h"
#include "fuzz_input.h"

namespace {

// Each numeric field of `given` has the same value in `kept`.
void check_numbers_kept(const nlohmann::json& given, const nlohmann::json& kept) {
  for (auto it = given.begin(); it != given.end(); ++it) {
    if (!it->is_number()) continue;
    if (!kept.contains(it.key())) continue;  // a legacy key the kind reads and ignores (models/kinds.h)
    const nlohmann::json& k = kept.at(it.key());
    // integers by their text: json's == would match 2^64-1 with -1
    const bool same = it->is_number_float() || k.is_number_float() ? it->get<double>() == k.get<double>()
                                                                    : it->dump() == k.dump();
    if (!same) std::abort();
  }
}

}  // namespace

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
  check_numbers_kept(nlohmann::json::parse(text), nlohmann::json::parse(once));
  const std::string twice = to_json(model_config_from_json(once, "round trip"));
  if (once != twice) std::abort();
  return 0;
}
