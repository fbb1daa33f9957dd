// What the RNN translation models (rnnsearch, luong) share as models: the
// source and target embeddings (one embedding when tied: all), the vocabulary
// projection, dropout with the model's stream, and the fused search decoder's
// entry points (prepared weights, the training-mode check). Each kind builds
// its encoder, attention and decoder between make_embeddings() and
// make_output(), so that parameters are drawn in the order they always were.
//
// Legend: V target vocabulary, E embedding size, R the features the vocabulary
// projection reads (rnnsearch: the readout; luong: h̃, Hd).
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/seq2seq.h"
#include "attn/models/step_packing.h"
#include "attn/nn/layers.h"

namespace attn::models {

class RnnTextModel : public Seq2SeqModel {
public:
  OutputLayer output_layer() const override { return {out_w_, out_b_}; }
  // The kind's fused search step (fused_decoder) over prepare_decoder()'s
  // weights, or its own when `prepared` is null. Throws std::logic_error in
  // training mode, std::invalid_argument for weights another model prepared.
  std::unique_ptr<StepDecoder> decoder(const EncoderMemory& memory, int64_t max_rows,
                                       std::shared_ptr<const PreparedDecoder> prepared = nullptr) const override;
  // The kind's weights prepared once (prepare_fused), packed for searches of kPackRows rows or more.
  std::shared_ptr<const PreparedDecoder> prepare_decoder(int64_t max_rows, nn::StepWeightType compute) const override;
  bool searches_in(nn::StepWeightType) const override { return true; }  // every type of nn/step_weight_types.h

protected:
  // kind: the model type, for messages ("rnnsearch decoder: ...")
  RnnTextModel(const ModelConfig& config, uint64_t dropout_seed, const char* kind)
      : Seq2SeqModel(config, dropout_seed), kind_(kind) {}
  // First in a kind's constructor: "src_embed" [src_vocab, E] and "tgt_embed"
  // [V, E], or one "embed" for both (tied_embeddings: all).
  void make_embeddings(Rng& rng);
  // Last: "output.weight" W [V, R] (or the target embedding when tied, R == E) and "output.bias" [V].
  void make_output(int64_t R, Rng& rng);
  // Dropout with the model's probability and stream, in training mode only.
  Tensor drop(const Tensor& x) const;

  // The kind's search step: its weights prepared for `packing`, and a decoder over them.
  virtual std::shared_ptr<const PreparedDecoder> prepare_fused(StepLayout layout) const = 0;
  virtual std::unique_ptr<StepDecoder> fused_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                     const EncoderMemory& memory, int64_t max_rows) const = 0;

  std::shared_ptr<nn::Embedding> src_embed_, tgt_embed_;  // the same module when tied: all
  Tensor out_w_, out_b_;                                  // [V, R] (the target embedding when tied), [V]

private:
  void check_eval() const;
  const char* kind_;
};

}  // namespace attn::models
