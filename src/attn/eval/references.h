// Reference streams -> per-segment reference lists, as sacreBLEU reads them.
//
// Metrics take references the way sacreBLEU's corpus_score does:
// refs[k][i] is the k-th reference translation of segment i ("streams").
// An empty string means "this segment has no k-th reference", so segments
// may have different numbers of references (sacreBLEU's "nrefs:var").
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attn::eval {

struct SegmentReferences {
  std::vector<std::vector<std::string_view>> per_segment;  // [segments][refs of that segment]
  int num_refs = 0;  // references per segment, or -1 when it varies ("var")
};

// Checks that there is at least one stream, that every stream has one line per
// hypothesis, that every segment has at least one non-empty reference and that
// all text is valid UTF-8; throws std::invalid_argument naming `metric`, the
// stream and the segment otherwise. The views point into `refs`.
SegmentReferences collect_references(const char* metric, const std::vector<std::string>& hyps,
                                     const std::vector<std::vector<std::string>>& refs);

// "2" or "var": the nrefs field of a signature.
std::string nrefs_string(int num_refs);

}  // namespace attn::eval
