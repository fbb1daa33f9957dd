// Fuzz target: the corpus readers (data/line_reader.*, data/parallel_corpus.*,
// data/utf8.*): plain or gzip text, TSV, two aligned files, invalid UTF-8.
//
// The first byte chooses the reader (bits 0-1: 0 or 3 lines, 1 TSV, 2 two
// files) and the TSV columns (bits 2-3 source, bits 4-5 target); the rest is the file
// (for two files, cut at "\n@@file@@\n"), given to the readers as an
// in-memory file (fuzz_input.h MemFile) so the real path-based code runs,
// gzip detection included. Lines read must be valid UTF-8 and decode and
// re-encode to the same bytes.
#include <cstdlib>

#include "attn/data/line_reader.h"
#include "attn/data/parallel_corpus.h"
#include "attn/data/utf8.h"
#include "fuzz_input.h"

namespace {

using namespace attn;

void check_lines(const std::vector<std::string>& lines) {
  for (const std::string& l : lines) {
    if (!data::is_valid_utf8(l)) std::abort();
    if (data::encode_utf8(data::decode_utf8(l)) != l) std::abort();
    if (l.find('\n') != std::string::npos) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view rest = fuzz::as_view(data + 1, size - 1);
  try {
    switch (mode & 3) {
      case 0:
      case 3: {
        fuzz::MemFile f(rest);
        check_lines(data::read_lines(f.path()));
        break;
      }
      case 1: {
        fuzz::MemFile f(rest);
        data::TsvOptions o;
        o.src_column = (mode >> 2) & 3;
        o.tgt_column = (mode >> 4) & 3;
        data::ParallelCorpus c = data::read_tsv(f.path(), o);
        if (c.src.size() != c.tgt.size()) std::abort();
        check_lines(c.src);
        check_lines(c.tgt);
        break;
      }
      default: {
        const auto parts = fuzz::split_parts(rest, "\n@@file@@\n");
        fuzz::MemFile src(parts[0]);
        fuzz::MemFile tgt(parts.size() > 1 ? parts[1] : std::string_view());
        data::ParallelCorpus c = data::read_parallel(src.path(), tgt.path());
        if (c.src.size() != c.tgt.size()) std::abort();
        break;
      }
    }
  } catch (const std::exception&) {
    // refused with a message
  }
  return 0;
}
