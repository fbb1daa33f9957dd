// The JSON the server answers with (README.md, "attn serve", lists every field).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "attn/decode/translator.h"

namespace attn::serve {

// One sentence's answer: {"translation", "src_tokens", "tgt_tokens", "score"},
// and with alignments "weights": [tgt pieces (+ one row for EOS when
// finished)][src pieces]. An empty text gives "", [], [], 0 (and []).
nlohmann::ordered_json translation_json(const decode::Translation& t, bool alignments);

// {"error": message, "field": field or null}, dumped
std::string error_body(const std::string& message, const std::string& field = "");

}  // namespace attn::serve
