// The corpora of a translation run, as the trainer sees them: the training
// corpus, and the validation and test corpora either read from their own
// files or held out of the training corpus by source sentence (data/split.h).
// A function of its own so that tests can check a config's split without
// training (tests/test_quickstart_data.cpp).
#pragma once
#include "attn/data/parallel_corpus.h"
#include "attn/train/mt_config.h"

namespace attn::train {

struct Corpora {
  data::ParallelCorpus train, valid, test;  // test is empty unless data.test_holdout > 0
};

// Reads data.train_* (and data.valid_* when given) and applies
// data.valid_holdout / data.test_holdout with data.split_seed, then adds
// data.casual_source_share casual copies to the training corpus. Throws
// std::invalid_argument when the training or validation corpus ends up empty.
Corpora read_corpora(const DataConfig& d);

}  // namespace attn::train
