// The web page's files, embedded in the binary at build time: every file of
// the repository's web/ folder becomes one entry (cmake/embed_files.cmake
// generates the table), so `attn serve` never reads the disk for them.
#pragma once
#include <cstddef>
#include <span>
#include <string_view>

namespace attn::serve {

struct StaticFile {
  const char* path;           // "/index.html": the file's path under web/, with a leading slash
  const char* content_type;   // from the extension ("text/html; charset=utf-8", ...)
  const unsigned char* data;  // the file's bytes
  size_t size;
};

// Every embedded file, sorted by path.
std::span<const StaticFile> static_files();

// The file served at `path` ("/" is "/index.html"), or nullptr.
const StaticFile* find_static_file(std::string_view path);

}  // namespace attn::serve
