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
// A line stops growing at LineLimit::max_bytes: memory stays within that
// bound per line whatever the file holds (a 10 MB line, a 1 GB file of NUL
// bytes: the NUL is refused in the first 64 KiB read, not at the line's end).
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace attn::data {

// The longest line read by default: far beyond any sentence, short of what
// would make a corpus of one line exhaust memory later (SentencePiece takes
// ~250 bytes per byte of a line it encodes).
constexpr size_t kMaxLineBytes = size_t(1) << 20;

// What read_lines does with a line over max_bytes: refuse it (std::invalid_argument
// "<path>:<line>: line over <max_bytes> bytes ..."), or, when `cut` is set, keep its
// first max_bytes bytes (less an incomplete UTF-8 character at the cut) and append
// its 0-based index to *cut.
struct LineLimit {
  size_t max_bytes = kMaxLineBytes;
  std::vector<size_t>* cut = nullptr;
};

// All lines of `path`. Throws std::runtime_error when the file cannot be
// opened, read or decompressed, std::invalid_argument on invalid UTF-8
// ("<path>:<line>: invalid UTF-8 at byte <k>"), a NUL byte
// ("<path>:<line>: NUL byte at byte <k>"), a line over the limit (above) or
// trailing garbage after gzip data.
std::vector<std::string> read_lines(const std::string& path, const LineLimit& limit = {});
// The same from an open file (stdin), `name` in the messages.
std::vector<std::string> read_lines(std::FILE* f, const std::string& name, const LineLimit& limit = {});

// Replaces `path` with `lines`, each followed by '\n', gzip-compressed when
// `gzip` is true (tensor/safetensors.h write_file_atomic: a temporary file
// renamed into place). Throws std::runtime_error naming the path when writing fails.
void write_lines(const std::string& path, const std::vector<std::string>& lines, bool gzip = false);

}  // namespace attn::data
