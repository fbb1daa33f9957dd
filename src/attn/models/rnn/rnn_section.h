// The shared part of rnnsearch's and luong's config readers, writers and
// validators (internal: the kinds' *_kind.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/config/object_reader.h"
#include "attn/models/rnn/rnn_config.h"

namespace attn::models {

// The name of `e` in a table of names (as ObjectReader::get_enum reads them), "?" if absent.
template <class E>
const char* enum_name(const std::vector<std::pair<std::string, E>>& names, E e) {
  for (const auto& [n, v] : names)
    if (v == e) return n.c_str();
  return "?";
}

// Reads / writes RnnConfig's keys (the file comment of rnn_config.h), in the order files have always had them.
void read_rnn_section(config::ObjectReader& r, RnnConfig& s);
void write_rnn_section(const RnnConfig& s, nlohmann::ordered_json& j);
// Sizes > 0 and within kMaxWidth / kMaxLayers (config::FieldError naming the field).
void validate_rnn_section(const RnnConfig& s);
// The embeddings, encoder layer 0's input weights and the decoder's recurrent weights.
int64_t rnn_min_parameter_count(const ModelConfig& c, const RnnConfig& s);

}  // namespace attn::models
