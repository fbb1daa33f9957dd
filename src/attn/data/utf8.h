// UTF-8 validation and decoding for text files and metrics.
//
// Valid means RFC 3629 UTF-8: shortest form only, no surrogates (U+D800..DFFF),
// nothing above U+10FFFF. This is what Python's strict 'utf-8' codec accepts,
// so a file we accept is a file sacreBLEU or SentencePiece would read the same.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace attn::data {

// Byte offset of the first byte that does not start a valid UTF-8 sequence,
// or std::string_view::npos when the whole text is valid.
size_t find_invalid_utf8(std::string_view text);

inline bool is_valid_utf8(std::string_view text) {
  return find_invalid_utf8(text) == std::string_view::npos;
}

// Code points of `text`; throws std::invalid_argument naming the byte offset
// when `text` is not valid UTF-8.
std::u32string decode_utf8(std::string_view text);

// UTF-8 bytes of the code points (which must be valid scalar values).
std::string encode_utf8(std::u32string_view text);

// Whitespace exactly as Python 3's str.isspace() (and so str.split()) sees it:
// \t \n \v \f \r, U+001C..U+001F, space, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_python_space(char32_t c);

}  // namespace attn::data
