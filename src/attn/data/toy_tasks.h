// Synthetic sequence tasks for demos and tests: no files, exact answers.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/tensor/random.h"
#include "attn/tensor/tensor.h"

namespace attn::data {

// Token ids shared by the toy tasks.
enum ToyToken : int { kPad = 0, kBos = 1, kEos = 2, kFirstDigit = 3 };
constexpr int kToyVocab = kFirstDigit + 10;

// One padded batch of a sequence-to-sequence task (ids float-encoded).
struct Seq2SeqBatch {
  Tensor src;                       // [batch, src_len]  digits, kPad after each length
  std::vector<int64_t> src_lengths; // [batch]
  Tensor tgt_in;                    // [batch, tgt_len]  kBos + target (teacher forcing input)
  Tensor tgt_out;                   // [batch, tgt_len]  target + kEos, kPad after
  std::vector<std::vector<int>> targets;  // the target token ids without kBos/kEos
};

// Digit strings of random length in [min_len, max_len]; the target is the
// string reversed. Deterministic given rng's state.
Seq2SeqBatch reverse_digits_batch(int64_t batch, int min_len, int max_len, Rng& rng);

}  // namespace attn::data
