// Fuzz target: the corpus readers (data/line_reader.*, data/parallel_corpus.*,
// data/utf8.*): plain or gzip text, TSV, two aligned files, invalid UTF-8;
// and the captioning corpora (data/caption_corpus.*: Karpathy split JSON).
//
// The first byte chooses the reader (bits 0-1: 0 lines, 1 TSV, 2 two files,
// 3 a caption index) and the TSV columns (bits 2-3 source, bits 4-5 target);
// the rest is the file (for two files, cut at "\n@@file@@\n"), given to the
// readers as an in-memory file (fuzz_input.h MemFile) so the real path-based
// code runs, gzip detection included. Lines read must be valid UTF-8 and
// decode and re-encode to the same bytes. A caption index read must hold
// only in-range numbers (sizes at least 1, boxes inside the image, refs
// naming an object), and a refused one a message of at most kMaxMessage
// bytes: a message quoting the input unbounded is how deep nesting crashed
// the reader (its dump() recursed) and how 30,000 brackets got printed.
#include <cstdlib>
#include <cstring>

#include "attn/data/caption_corpus.h"
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

constexpr size_t kMaxMessage = 1024;

// The caption index's numbers, each within what the reader promises.
void check_caption_corpus(const data::CaptionCorpus& c) {
  for (const data::CaptionImage& img : c.images) {
    if (img.width < 0 || img.height < 0 || img.width > data::kMaxCaptionImageSide ||
        img.height > data::kMaxCaptionImageSide)
      std::abort();
    for (const data::CaptionObject& o : img.objects) {
      const auto& b = o.box;
      if (!(b[0] >= 0 && b[1] >= 0 && b[0] < b[2] && b[1] < b[3] && b[2] <= img.width && b[3] <= img.height)) std::abort();
      if (!(o.visible >= 0 && o.visible <= 1)) std::abort();
    }
    for (const data::Caption& cap : img.captions)
      for (int ref : cap.refs)
        if (ref < -1 || ref >= int(img.objects.size())) std::abort();
  }
}

void read_caption_index(std::string_view file) {
  fuzz::MemFile f(file);
  try {
    check_caption_corpus(data::read_caption_corpus(f.path(), "/nonexistent", {/*check_files=*/false}));
  } catch (const std::invalid_argument& e) {
    if (std::strlen(e.what()) > kMaxMessage) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view rest = fuzz::as_view(data + 1, size - 1);
  try {
    switch (mode & 3) {
      case 3:
        read_caption_index(rest);
        break;
      case 0: {
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
