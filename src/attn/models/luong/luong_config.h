// luong's config section (model.type: luong): the shared RNN fields
// (models/rnn/rnn_config.h) and
//   score: dot | general | concat   the score function
//   window: global | local-m | local-p, window_half_width   global or local attention, D
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/rnn/rnn_config.h"

namespace attn::models {

enum class LuongScore { Dot, General, Concat };
enum class LuongWindow { Global, LocalM, LocalP };

struct LuongConfig : RnnConfig {
  LuongScore score = LuongScore::General;     // score function
  LuongWindow window = LuongWindow::Global;   // global or local attention
  int64_t window_half_width = 10;             // local: D, the window is [p - D, p + D]
  std::unique_ptr<KindConfig> clone() const override { return std::make_unique<LuongConfig>(*this); }
};

const char* name(LuongScore s);
const char* name(LuongWindow w);

}  // namespace attn::models
