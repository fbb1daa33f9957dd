#include "attn/eval/references.h"

#include <set>
#include <stdexcept>

#include "attn/data/utf8.h"

namespace attn::eval {

SegmentReferences collect_references(const char* metric, const std::vector<std::string>& hyps,
                                     const std::vector<std::vector<std::string>>& refs) {
  const std::string who = metric;
  if (refs.empty()) throw std::invalid_argument(who + ": no reference streams given");
  for (size_t k = 0; k < refs.size(); ++k) {
    if (refs[k].size() != hyps.size())
      throw std::invalid_argument(who + ": reference stream " + std::to_string(k) + " has " +
                                  std::to_string(refs[k].size()) + " lines but there are " +
                                  std::to_string(hyps.size()) + " hypotheses");
  }
  for (size_t i = 0; i < hyps.size(); ++i) {
    const size_t bad = data::find_invalid_utf8(hyps[i]);
    if (bad != std::string_view::npos)
      throw std::invalid_argument(who + ": hypothesis " + std::to_string(i) + " is not valid UTF-8 (byte " +
                                  std::to_string(bad) + ")");
  }

  SegmentReferences out;
  out.per_segment.resize(hyps.size());
  std::set<size_t> counts;
  for (size_t i = 0; i < hyps.size(); ++i) {
    for (size_t k = 0; k < refs.size(); ++k) {
      const std::string& r = refs[k][i];
      if (r.empty()) continue;
      const size_t bad = data::find_invalid_utf8(r);
      if (bad != std::string_view::npos)
        throw std::invalid_argument(who + ": reference stream " + std::to_string(k) + " line " + std::to_string(i) +
                                    " is not valid UTF-8 (byte " + std::to_string(bad) + ")");
      out.per_segment[i].push_back(r);
    }
    if (out.per_segment[i].empty())
      throw std::invalid_argument(who + ": segment " + std::to_string(i) + " has no non-empty reference");
    counts.insert(out.per_segment[i].size());
  }
  out.num_refs = counts.size() == 1 ? int(*counts.begin()) : counts.empty() ? int(refs.size()) : -1;
  return out;
}

std::string nrefs_string(int num_refs) { return num_refs < 0 ? "var" : std::to_string(num_refs); }

}  // namespace attn::eval
