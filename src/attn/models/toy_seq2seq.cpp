#include "attn/models/toy_seq2seq.h"

#include <algorithm>

namespace attn::models {

ToySeq2Seq::ToySeq2Seq(const ToySeq2SeqOptions& opt, Rng& rng) : opt_(opt) {
  src_embed_ = register_module("src_embed", std::make_shared<nn::Embedding>(opt.vocab, opt.embed, data::kPad, rng));
  tgt_embed_ = register_module("tgt_embed", std::make_shared<nn::Embedding>(opt.vocab, opt.embed, data::kPad, rng));
  nn::RnnOptions ro;
  ro.input_size = opt.embed;
  ro.hidden_size = opt.hidden;
  encoder_ = register_module("encoder", std::make_shared<nn::GRU>(ro, rng));
  decoder_ = register_module("decoder", std::make_shared<nn::GRU>(ro, rng));
  out_ = register_module("out", std::make_shared<nn::Linear>(opt.hidden, opt.vocab, true, rng));
}

Tensor ToySeq2Seq::encode(const Tensor& src, const std::vector<int64_t>& lengths) const {
  GruResult enc = encoder_->forward(src_embed_->forward(src), lengths);
  return enc.h_n;  // [1, batch, H]: the decoder's h0
}

Tensor ToySeq2Seq::loss(const data::Seq2SeqBatch& b) const {
  int64_t batch = b.tgt_in.size(0), tgt_len = b.tgt_in.size(1);
  Tensor h0 = encode(b.src, b.src_lengths);
  // Teacher forcing: all target steps at once; positions past each target's
  // end are ignored by the loss, so every row runs the full length.
  std::vector<int64_t> tgt_lengths(size_t(batch), tgt_len);
  GruResult dec = decoder_->forward(tgt_embed_->forward(b.tgt_in), tgt_lengths, h0);
  Tensor logits = out_->forward(dec.output);  // [batch, tgt_len, V]
  CrossEntropyOptions ce;
  ce.ignore_index = data::kPad;
  return cross_entropy(reshape(logits, {batch * tgt_len, opt_.vocab}), reshape(b.tgt_out, {batch * tgt_len}), ce);
}

std::vector<std::vector<int>> ToySeq2Seq::greedy(const Tensor& src, const std::vector<int64_t>& lengths,
                                                 int max_len) const {
  NoGradGuard no_grad;
  int64_t batch = src.size(0);
  Tensor h = encode(src, lengths);  // [1, batch, H]
  Tensor prev = Tensor::full({batch, 1}, float(data::kBos));
  std::vector<int64_t> ones(size_t(batch), 1);
  std::vector<std::vector<int>> out(static_cast<size_t>(batch));
  std::vector<bool> done(static_cast<size_t>(batch), false);
  for (int step = 0; step < max_len; ++step) {
    GruResult dec = decoder_->forward(tgt_embed_->forward(prev), ones, h);
    h = dec.h_n;
    Tensor logits = out_->forward(dec.output);  // [batch, 1, V]
    bool all_done = true;
    for (int64_t i = 0; i < batch; ++i) {
      const float* row = logits.data() + i * opt_.vocab;
      int best = int(std::max_element(row, row + opt_.vocab) - row);
      prev.data()[i] = float(best);
      if (done[size_t(i)]) continue;
      if (best == data::kEos) done[size_t(i)] = true;
      else out[size_t(i)].push_back(best);
      all_done = all_done && done[size_t(i)];
    }
    if (all_done) break;
  }
  return out;
}

}  // namespace attn::models
