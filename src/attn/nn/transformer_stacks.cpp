#include "attn/nn/transformer_stacks.h"

#include <stdexcept>
#include <string>

namespace attn::nn {
namespace {

void check_layers(const char* who, int64_t n) {
  if (n < 1) throw std::invalid_argument(std::string(who) + ": num_layers " + std::to_string(n) + " (needs >= 1)");
}

}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerStackOptions& opt, Rng& rng) : options(opt) {
  check_layers("TransformerEncoder", opt.num_layers);
  for (int64_t i = 0; i < opt.num_layers; ++i) layers.push_back(std::make_shared<TransformerEncoderLayer>(opt.layer, rng));
  for (int64_t i = 0; i < opt.num_layers; ++i) register_module("layers." + std::to_string(i), layers[size_t(i)]);
  if (opt.has_final_norm()) norm = register_module("norm", std::make_shared<LayerNorm>(opt.layer.d_model, opt.layer.layer_norm_eps));
}

Tensor TransformerEncoder::forward(const Tensor& x, const Tensor& lengths, std::vector<TransformerLayerWeights>* weights) const {
  if (weights) weights->assign(layers.size(), {});
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) h = layers[i]->forward(h, lengths, weights ? &(*weights)[i] : nullptr);
  return norm ? norm->forward(h) : h;
}

Tensor TransformerEncoder::forward_rows(const Tensor& x, const PaddedRows& rows) const {
  Tensor h = x;
  for (const auto& layer : layers) h = layer->forward_rows(h, rows);
  return norm ? norm->forward(h) : h;
}

TransformerDecoder::TransformerDecoder(const TransformerStackOptions& opt, Rng& rng) : options(opt) {
  check_layers("TransformerDecoder", opt.num_layers);
  for (int64_t i = 0; i < opt.num_layers; ++i) layers.push_back(std::make_shared<TransformerDecoderLayer>(opt.layer, rng));
  for (int64_t i = 0; i < opt.num_layers; ++i) register_module("layers." + std::to_string(i), layers[size_t(i)]);
  if (opt.has_final_norm()) norm = register_module("norm", std::make_shared<LayerNorm>(opt.layer.d_model, opt.layer.layer_norm_eps));
}

Tensor TransformerDecoder::forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths,
                                   const Tensor& target_lengths, std::vector<TransformerLayerWeights>* weights) const {
  if (weights) weights->assign(layers.size(), {});
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i)
    h = layers[i]->forward(h, memory, memory_lengths, target_lengths, weights ? &(*weights)[i] : nullptr);
  return norm ? norm->forward(h) : h;
}

Tensor TransformerDecoder::forward_rows(const Tensor& x, const PaddedRows& t_rows, const Tensor& memory,
                                        const PaddedRows& m_rows) const {
  Tensor h = x;
  for (const auto& layer : layers) h = layer->forward_rows(h, t_rows, memory, m_rows);
  return norm ? norm->forward(h) : h;
}

}  // namespace attn::nn
