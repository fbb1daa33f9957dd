// One padded batch of sentence pairs, as the models read it: what the batcher
// (data/batcher.h) makes from a corpus and the trainer feeds to a model.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::data {

// Ids are float-encoded, as everywhere in the engine; pad / bos / eos are the
// vocabulary's special ids (data/special_ids.h).
struct Seq2SeqBatch {
  Tensor src;                             // [batch, src_len]  source ids, pad after each length; or for a
                                          // captioner images [batch, 3, H, W] (train/caption_task.h)
  std::vector<int64_t> src_lengths;       // [batch] (images: the captioner's grid cells, not read)
  std::vector<int64_t> src_rows;          // [examples] the src row each example reads (empty: row i). A
                                          // captioner's batch holds each image once for all its captions,
                                          // so the CNN runs once per image (train/caption_task.h); then
                                          // src and src_lengths have one row per image, the rest per example
  Tensor tgt_in;                          // [batch, tgt_len]  bos + target (teacher forcing input)
  Tensor tgt_out;                         // [batch, tgt_len]  target + eos, pad after
  std::vector<std::vector<int>> targets;  // [batch][len] the target ids without bos / eos
};

}  // namespace attn::data
