// Trains the toy GRU encoder-decoder on digit reversal: the quick start's
// demo for now, and the engine's end-to-end learning test.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attn/models/toy_seq2seq.h"

namespace attn::train {

struct ToyTrainOptions {
  int steps = 1500;          // optimizer steps
  int64_t batch = 64;        // sentences per step
  int min_len = 3;           // shortest digit string
  int max_len = 8;           // longest digit string
  double lr = 3e-3;          // Adam learning rate
  double clip = 1.0;         // global gradient-norm clip
  uint64_t seed = 1;         // parameters and data; same seed + threads => same numbers
  int log_every = 100;       // progress callback period (steps)
  int64_t eval_size = 256;   // held-out sentences (drawn from another seed) for accuracy
  models::ToySeq2SeqOptions model;
};

struct ToyProgress {
  int step = 0;
  double loss = 0;            // mean training loss over the last log_every steps
  double tokens_per_s = 0;    // target tokens per second over the same window
  double eval_accuracy = 0;   // fraction of held-out strings reversed exactly
  double elapsed_s = 0;
};

struct ToyExample {
  std::string source, expected, output;
};

struct ToyResult {
  double final_loss = 0;      // mean loss over the last log_every steps
  double eval_accuracy = 0;   // on the held-out set after training
  std::vector<ToyExample> examples;  // a few held-out strings with the model's output
  std::vector<std::pair<std::string, Tensor>> parameters;  // the trained parameters
};

ToyResult train_toy_reverse(const ToyTrainOptions& opt, const std::function<void(const ToyProgress&)>& on_progress = {});

}  // namespace attn::train
