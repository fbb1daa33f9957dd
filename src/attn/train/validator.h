// Validation of a translation model during training: the perplexity of the
// whole validation set (teacher-forced, in the batcher's evaluation order) and
// the corpus BLEU of its first train.valid_bleu_sentences sentences decoded
// with train.valid_beam (greedy when 1).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "attn/data/batcher.h"
#include "attn/data/parallel_corpus.h"
#include "attn/data/vocab.h"
#include "attn/models/seq2seq.h"
#include "attn/train/mt_config.h"
#include "attn/train/schedule.h"

namespace attn::train {

class Validator {
public:
  // Encodes `valid` once (no length filter: every pair counts). The
  // vocabularies must outlive the validator.
  Validator(const data::ParallelCorpus& valid, const data::SubwordVocab& src_vocab,
            const data::SubwordVocab& tgt_vocab, const TrainOptions& options);

  // Runs in eval mode without autograd and leaves the model in training mode.
  Validation run(models::Seq2SeqModel& model) const;

private:
  const data::SubwordVocab &sv_, &tv_;
  TrainOptions t_;
  data::EncodedCorpus enc_;
  std::unique_ptr<data::Batcher> batcher_;
  std::vector<std::vector<int64_t>> plan_;
  std::vector<std::string> src_, ref_;
};

}  // namespace attn::train
