#include "attn/serve/static_files.h"

namespace attn::serve {

const StaticFile* find_static_file(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const StaticFile& f : static_files())
    if (path == f.path) return &f;
  return nullptr;
}

}  // namespace attn::serve
