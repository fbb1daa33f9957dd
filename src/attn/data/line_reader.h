// Reading text corpora: one sentence per line, plain or gzip-compressed.
//
// Compression is detected from the content (gzip magic bytes), not the file
// name. Lines end at '\n'; one '\r' before it is dropped (CRLF files); a final
// line without '\n' counts; a file ending in '\n' has no extra empty line.
// Every line must be valid UTF-8: the error names the file, the 1-based line
// and the byte offset within the line.
#pragma once
#include <string>
#include <vector>

namespace attn::data {

// All lines of `path`. Throws std::runtime_error when the file cannot be
// opened or decompressed, std::invalid_argument on invalid UTF-8
// ("<path>:<line>: invalid UTF-8 at byte <k>").
std::vector<std::string> read_lines(const std::string& path);

// Writes `lines` to `path`, each followed by '\n'; gzip-compressed when
// `gzip` is true. Throws std::runtime_error when writing fails.
void write_lines(const std::string& path, const std::vector<std::string>& lines, bool gzip = false);

}  // namespace attn::data
