#include "attn/data/parallel_corpus.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "attn/data/line_reader.h"

namespace attn::data {

ParallelCorpus read_parallel(const std::string& src_path, const std::string& tgt_path) {
  ParallelCorpus c;
  c.src = read_lines(src_path);
  c.tgt = read_lines(tgt_path);
  if (c.src.size() != c.tgt.size())
    throw std::invalid_argument("read_parallel: line counts differ: '" + src_path + "' has " +
                                std::to_string(c.src.size()) + " lines but '" + tgt_path + "' has " +
                                std::to_string(c.tgt.size()) + " lines");
  return c;
}

ParallelCorpus read_tsv(const std::string& path, const TsvOptions& options) {
  if (options.src_column < 0 || options.tgt_column < 0 || options.src_column == options.tgt_column)
    throw std::invalid_argument("read_tsv: need two different non-negative columns, got src " +
                                std::to_string(options.src_column) + " and tgt " +
                                std::to_string(options.tgt_column));
  const int needed = std::max(options.src_column, options.tgt_column) + 1;
  const std::vector<std::string> lines = read_lines(path);
  ParallelCorpus c;
  c.src.reserve(lines.size());
  c.tgt.reserve(lines.size());
  std::vector<std::string_view> fields;
  for (size_t i = 0; i < lines.size(); ++i) {
    fields.clear();
    std::string_view rest = lines[i];
    while (true) {
      const size_t tab = rest.find('\t');
      fields.push_back(rest.substr(0, tab));
      if (tab == std::string_view::npos) break;
      rest.remove_prefix(tab + 1);
    }
    if (int(fields.size()) < needed)
      throw std::invalid_argument(path + ":" + std::to_string(i + 1) + ": expected at least " +
                                  std::to_string(needed) + " tab-separated fields, found " +
                                  std::to_string(fields.size()));
    c.src.emplace_back(fields[options.src_column]);
    c.tgt.emplace_back(fields[options.tgt_column]);
  }
  return c;
}

}  // namespace attn::data
