// The data of a translation training run: its corpora, its vocabularies
// (trained, copied from given models, or reloaded from the run directory when
// resuming) and the training pairs encoded and length-filtered.
#pragma once
#include <functional>
#include <string>

#include "attn/data/encoded_corpus.h"
#include "attn/data/vocab.h"
#include "attn/train/corpora.h"
#include "attn/train/mt_config.h"
#include "attn/train/task.h"  // PrintFn

namespace attn::train {

struct RunData {
  Corpora corpora;                          // train / valid / test as read (test may be empty)
  data::SubwordVocab src_vocab, tgt_vocab;  // out_dir/vocab.{src,tgt}.model
  data::EncodedCorpus train;                // training pairs that pass data.max_*_tokens / max_ratio
  data::FilterReport filtered;              // what the length filter dropped
};

// Reads the corpora, writes the test split (out_dir/test.src, test.ref) when
// there is one, makes the vocabularies out_dir/vocab.src.model and
// vocab.tgt.model (resume: they must exist) and encodes and filters the
// training pairs. Throws std::invalid_argument / std::runtime_error naming the
// file or field: unreadable corpora, vocabularies whose special ids differ,
// no training pair left after filtering.
RunData prepare_run_data(const TrainConfig& config, bool resume, const PrintFn& print);

// The SentencePiece training options of a run's vocab section (one thread:
// SentencePiece's result depends on its thread count, so runs stay repeatable).
data::VocabTrainOptions vocab_train_options(const VocabConfig& v);

}  // namespace attn::train
