// The training task of the translation models: sentence pairs from the
// config's corpora (run_data.h), token-budget batches from length buckets
// (data/batcher.h) and validation by perplexity and BLEU (validator.h).
#pragma once
#include <memory>

#include "attn/train/task.h"

namespace attn::train {

// Reads the corpora and makes the vocabularies (prepare_run_data); throws as
// it does, naming the file or field.
std::unique_ptr<TrainingTask> make_translation_task(const TrainConfig& config, bool resume, const PrintFn& print);

}  // namespace attn::train
