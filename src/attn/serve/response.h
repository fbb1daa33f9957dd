// The JSON the server answers with (docs/translating-and-serving.md, "attn serve", lists every field).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "attn/decode/captioner.h"
#include "attn/decode/translator.h"

namespace attn::serve {

// One sentence's answer: {"translation", "src_tokens", "tgt_tokens", "score"},
// and with alignments "weights": [tgt pieces (+ one row for EOS when
// finished)][src pieces]. An empty text gives "", [], [], 0 (and []).
nlohmann::ordered_json translation_json(const decode::Translation& t, bool alignments);

// One uploaded image's answer (POST /v1/caption): {"caption", "words" [T],
// "attention" [T][Gh * Gw] (word t's weights over the grid: the mean of its
// pieces' rows, decode::merge_pieces; each row sums to 1), "grid" [Gh, Gw],
// "image_size" [H, W] (what the model resized the upload to), "tgt_tokens"
// (pieces), "log_prob", "finished"}. `pieces` are the caption's pieces.
nlohmann::ordered_json caption_json(const decode::PieceCaption& c, const std::vector<std::string>& pieces,
                                    const std::string& caption, const decode::ImageModelInput& in);

// {"error": message, "field": field or null}, dumped
std::string error_body(const std::string& message, const std::string& field = "");

}  // namespace attn::serve
