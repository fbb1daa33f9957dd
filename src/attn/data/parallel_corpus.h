// Parallel corpora as text: two aligned files or one tab-separated file.
//
// Files are read with read_lines (plain or gzip, UTF-8 checked, see
// line_reader.h). Pair i is line i+1 of the file(s).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::data {

struct ParallelCorpus {
  std::vector<std::string> src;  // [pairs] source sentences
  std::vector<std::string> tgt;  // [pairs] target sentences, tgt[i] translates src[i]
  int64_t size() const { return int64_t(src.size()); }
};

// Line i of `src_path` with line i of `tgt_path`. Throws std::invalid_argument
// naming both files and both line counts when the counts differ.
ParallelCorpus read_parallel(const std::string& src_path, const std::string& tgt_path);

struct TsvOptions {
  int src_column = 0;  // 0-based tab-separated field holding the source sentence
  int tgt_column = 1;  // field holding the target (swap the two to reverse direction)
};

// One pair per line of a tab-separated file, e.g. Tatoeba's "English\tFrench".
// Fields beyond those used are ignored (newer Tatoeba exports add an
// attribution column). Throws std::invalid_argument naming the file and line
// when a line has too few fields.
ParallelCorpus read_tsv(const std::string& path, const TsvOptions& options = {});

}  // namespace attn::data
