// Training-data augmentation that keeps every original pair and only adds.
//
// Casual sources: people type "he doesn't like apples" into a translator,
// while corpora like Tatoeba hold only "He doesn't like apples.". A model that
// never saw a lower-case sentence start or a missing full stop translates the
// casual form badly; a share of training pairs repeated with a casual source
// (target unchanged) teaches it that the two mean the same.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/data/parallel_corpus.h"

namespace attn::data {

// `sentence` as typed casually: ASCII letters lower-cased (other characters
// unchanged), then trailing '.', '!', '?' and spaces removed.
// "He doesn't like apples." -> "he doesn't like apples".
std::string casual_form(std::string_view sentence);

// Appends to `corpus`, after its original pairs, a copy of
// floor(share * corpus.size()) pairs chosen with `seed` (thread-independent),
// each with source casual_form(src) and the same target. Pairs whose casual
// form equals their source are not copied (so fewer may be added). Returns
// the number of pairs added. Throws std::invalid_argument for a share outside
// [0, 1].
int64_t add_casual_sources(ParallelCorpus& corpus, double share, uint64_t seed);

}  // namespace attn::data
