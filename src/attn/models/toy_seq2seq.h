// A small GRU encoder-decoder (no attention): the engine's end-to-end check
// and the first demo. The encoder reads the source; its final state starts
// the decoder, which is trained with teacher forcing and decoded greedily.
//
// Legend: batch = sentences, src_len / tgt_len = padded lengths, E = embedding
// size, H = hidden size, V = vocabulary size.
#pragma once
#include <memory>
#include <vector>

#include "attn/data/toy_tasks.h"
#include "attn/nn/layers.h"
#include "attn/nn/rnn.h"

namespace attn::models {

struct ToySeq2SeqOptions {
  int64_t vocab = data::kToyVocab;  // V, shared by source and target
  int64_t embed = 32;               // E
  int64_t hidden = 128;             // H of encoder and decoder
};

class ToySeq2Seq : public nn::Module {
public:
  ToySeq2Seq(const ToySeq2SeqOptions& opt, Rng& rng);

  // Mean cross-entropy per target token (padding ignored) with teacher forcing:
  // the decoder reads b.tgt_in [batch, tgt_len] and predicts b.tgt_out.
  Tensor loss(const data::Seq2SeqBatch& b) const;

  // Greedy decoding: src [batch, src_len] with lengths; stops at kEos or
  // max_len tokens. Returns the tokens per sentence without kEos.
  std::vector<std::vector<int>> greedy(const Tensor& src, const std::vector<int64_t>& lengths, int max_len) const;

  const ToySeq2SeqOptions& options() const { return opt_; }

private:
  // encoder's final state [batch, H]
  Tensor encode(const Tensor& src, const std::vector<int64_t>& lengths) const;

  ToySeq2SeqOptions opt_;
  std::shared_ptr<nn::Embedding> src_embed_, tgt_embed_;
  std::shared_ptr<nn::GRU> encoder_, decoder_;
  std::shared_ptr<nn::Linear> out_;
};

}  // namespace attn::models
