#include "attn/models/rnn/rnn_text_model.h"

#include <stdexcept>
#include <string>

#include "attn/autograd/ops.h"
#include "attn/models/model_parts.h"

namespace attn::models {

void RnnTextModel::make_embeddings(Rng& rng) {
  const ModelConfig& c = config_;
  if (c.tied_embeddings == TiedEmbeddings::All) {
    src_embed_ = tgt_embed_ = register_module("embed", detail::make_embedding(c.tgt_vocab, c, rng));
  } else {
    src_embed_ = register_module("src_embed", detail::make_embedding(c.src_vocab, c, rng));
    tgt_embed_ = register_module("tgt_embed", detail::make_embedding(c.tgt_vocab, c, rng));
  }
}

void RnnTextModel::make_output(int64_t R, Rng& rng) {
  const ModelConfig& c = config_;
  if (c.tied_embeddings == TiedEmbeddings::None)
    out_w_ = register_parameter("output.weight", detail::uniform_param({c.tgt_vocab, R}, R, rng));
  else
    out_w_ = tgt_embed_->weight;  // [V, E], R == E (validated)
  out_b_ = register_parameter("output.bias", detail::uniform_param({c.tgt_vocab}, R, rng));
}

Tensor RnnTextModel::drop(const Tensor& x) const {
  return dropout(x, float(config_.dropout), is_training(), dropout_rng_);
}

void RnnTextModel::check_eval() const {
  if (is_training())
    throw std::logic_error(std::string(kind_) + " decoder: the model is in training mode (dropout active)");
}

std::shared_ptr<const PreparedDecoder> RnnTextModel::prepare_decoder(int64_t max_rows,
                                                                    nn::StepWeightType compute) const {
  check_eval();
  return prepare_fused(step_layout(max_rows, compute));
}

std::unique_ptr<StepDecoder> RnnTextModel::decoder(const EncoderMemory& memory, int64_t max_rows,
                                                   std::shared_ptr<const PreparedDecoder> prepared) const {
  check_eval();
  return fused_decoder(prepared ? std::move(prepared) : prepare_decoder(max_rows, nn::StepWeightType::F32), memory,
                       max_rows);
}

}  // namespace attn::models
