// How deep JSON text nests, found without parsing it.
//
// nlohmann 3.11 parses and frees any depth without recursing, but copying a
// value (basic_json's copy constructor), dump() and operator== recurse once
// per level: a reader that copies or re-serialises part of an outside file
// (the trainer state's "module_rngs", "extra") overflows the stack on a value
// nested a million deep. Such a reader checks the text first. A linear scan,
// not a parser callback: the callback made parsing 2-3x slower.
//
// Header-only; depends on nothing.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace attn::config {

// The byte offset of the first '[' or '{' (outside strings) that opens level
// max_depth + 1, or nothing when the text nests no deeper. On text that is
// not JSON it agrees with the parser up to where the parser stops.
inline std::optional<size_t> nesting_beyond(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace attn::config
