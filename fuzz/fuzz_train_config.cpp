// Fuzz target: the YAML training config (train/mt_config.*, through
// config/object_reader.h and models/config.*), with `--set` overrides.
//
// Input: the YAML text, then optionally "\n@@set@@\n"-separated overrides
// ("section.key=value"), as `attn train --config F --set ...` passes them.
#include <cstdlib>

#include "attn/train/mt_config.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn;
  const auto parts = fuzz::split_parts(fuzz::as_view(data, size), "\n@@set@@\n");
  const std::string yaml(parts[0]);
  const std::vector<std::string> overrides(parts.begin() + 1, parts.end());
  try {
    train::TrainConfig c = train::parse_train_config(yaml, overrides, "run.yaml");
    (void)train::to_json(c);
  } catch (const std::exception&) {
    // refused with a message
  }
  return 0;
}
