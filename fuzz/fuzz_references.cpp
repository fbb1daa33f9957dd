// Fuzz target: `attn score`'s inputs (eval/references.*, eval/bleu.*,
// eval/chrf.*): a hypothesis file and reference files, each read with
// data::read_lines as the command reads them.
//
// Input: the hypothesis file, then "\n@@file@@\n"-separated reference files.
// Scores must be finite and in [0, 100].
#include <cmath>
#include <cstdlib>

#include "attn/data/line_reader.h"
#include "attn/eval/bleu.h"
#include "attn/eval/chrf.h"
#include "fuzz_input.h"

namespace {

void check_score(double s) {
  if (!std::isfinite(s) || s < 0 || s > 100.0 + 1e-9) std::abort();
}

std::vector<std::string> read(std::string_view bytes) {
  attn::fuzz::MemFile f(bytes);
  return attn::data::read_lines(f.path());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn;
  const auto parts = fuzz::split_parts(fuzz::as_view(data, size), "\n@@file@@\n");
  try {
    const std::vector<std::string> hyps = read(parts[0]);
    std::vector<std::vector<std::string>> refs;
    for (size_t i = 1; i < parts.size(); ++i) refs.push_back(read(parts[i]));
    check_score(eval::corpus_bleu(hyps, refs).score);
    check_score(eval::corpus_chrf(hyps, refs).score);
    if (!hyps.empty()) {
      std::vector<std::string> first;
      for (const auto& r : refs) first.push_back(r[0]);
      check_score(eval::sentence_bleu(hyps[0], first).score);
      check_score(eval::sentence_chrf(hyps[0], first).score);
    }
  } catch (const std::exception&) {
    // refused with a message
  }
  return 0;
}
