// Reading text corpora: one sentence per line, plain or gzip-compressed.
//
// Compression is detected from the content (gzip magic bytes), not the file
// name. Lines end at '\n'; one '\r' before it is dropped (CRLF files); a final
// line without '\n' counts; a file ending in '\n' has no extra empty line.
// Every line must be valid UTF-8 without NUL bytes (a NUL means a binary or
// UTF-16 file): the error names the file, the 1-based line and the byte offset
// within the line. A gzip file must end where its (last) gzip member ends:
// trailing bytes, a cut stream or corrupt data are refused naming the file
// (concatenated members, as `cat a.gz b.gz` makes, read as one stream).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace attn::data {

// All lines of `path`. Throws std::runtime_error when the file cannot be
// opened, read or decompressed, std::invalid_argument on invalid UTF-8
// ("<path>:<line>: invalid UTF-8 at byte <k>"), a NUL byte
// ("<path>:<line>: NUL byte at byte <k>") or trailing garbage after gzip data.
std::vector<std::string> read_lines(const std::string& path);
// The same from an open file (stdin), `name` in the messages.
std::vector<std::string> read_lines(std::FILE* f, const std::string& name);

// Replaces `path` with `lines`, each followed by '\n', gzip-compressed when
// `gzip` is true (tensor/safetensors.h write_file_atomic: a temporary file
// renamed into place). Throws std::runtime_error naming the path when writing fails.
void write_lines(const std::string& path, const std::vector<std::string>& lines, bool gzip = false);

}  // namespace attn::data
