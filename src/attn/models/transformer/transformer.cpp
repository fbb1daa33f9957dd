// The Transformer model (see the header): embeddings, the two stacks, the
// teacher-forced features and the reference step.
#include "attn/models/transformer/transformer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/models/attention_maps.h"
#include "attn/models/model_parts.h"
#include "attn/models/transformer/transformer_prepared.h"
#include "attn/models/transformer/transformer_search.h"

namespace attn::models {
namespace {

nn::TransformerStackOptions stack_options(const ModelConfig& c, const TransformerConfig& s, int64_t layers) {
  nn::TransformerLayerOptions o(c.embed, s.heads);
  o.set_dim_feedforward(s.feed_forward)
      .set_dropout(float(c.dropout))
      .set_attention_dropout(float(s.attention_dropout))
      .set_activation(s.activation == TransformerActivation::Gelu ? Activation::GELU : Activation::ReLU)
      .set_norm_first(s.norm == TransformerNorm::Pre);
  return nn::TransformerStackOptions(o, layers);
}

// N(0, 1/E) (fairseq's init), padding row zero: sqrt(E) emb(y) then has the scale of the positions' entries.
std::shared_ptr<nn::Embedding> make_embedding(int64_t vocab, const ModelConfig& c, Rng& rng) {
  auto e = std::make_shared<nn::Embedding>(vocab, c.embed, c.specials.pad, rng);
  const float scale = 1.0f / std::sqrt(float(c.embed));
  float* w = e->weight.data();
  for (int64_t i = 0; i < e->weight.numel(); ++i) w[i] *= scale;
  return e;
}

}  // namespace

std::string transformer_map_name(int64_t layer, int64_t head) { return layered_map_name(kCrossFamily, layer, head); }

Transformer::Transformer(const ModelConfig& config, Rng& init, uint64_t dropout_seed)
    : Seq2SeqModel(config, dropout_seed),
      cfg_(detail::own_section<TransformerConfig>(config_, "Transformer", "transformer")) {
  validate(config_);
  const ModelConfig& c = config_;
  if (c.tied_embeddings == TiedEmbeddings::All) {
    src_embed_ = tgt_embed_ = register_module("embed", make_embedding(c.tgt_vocab, c, init));
  } else {
    src_embed_ = register_module("src_embed", make_embedding(c.src_vocab, c, init));
    tgt_embed_ = register_module("tgt_embed", make_embedding(c.tgt_vocab, c, init));
  }
  const float p = float(c.dropout);
  if (cfg_.positions == TransformerPositions::Learned) {
    src_learned_ = register_module("src_positions", std::make_shared<nn::LearnedPositionalEmbedding>(c.embed, cfg_.max_positions, p, init));
    tgt_learned_ = register_module("tgt_positions", std::make_shared<nn::LearnedPositionalEmbedding>(c.embed, cfg_.max_positions, p, init));
  } else {
    src_sin_ = register_module("src_positions", std::make_shared<nn::PositionalEncoding>(c.embed, cfg_.max_positions, p, init));
    tgt_sin_ = register_module("tgt_positions", std::make_shared<nn::PositionalEncoding>(c.embed, cfg_.max_positions, p, init));
  }
  encoder_ = register_module("encoder", std::make_shared<nn::TransformerEncoder>(stack_options(c, cfg_, cfg_.encoder_layers), init));
  decoder_ = register_module("decoder", std::make_shared<nn::TransformerDecoder>(stack_options(c, cfg_, cfg_.decoder_layers), init));
  if (c.tied_embeddings == TiedEmbeddings::None)
    out_w_ = register_parameter("output.weight", detail::uniform_param({c.tgt_vocab, c.embed}, c.embed, init));
  else
    out_w_ = tgt_embed_->weight;
  out_b_ = register_parameter("output.bias", Tensor::zeros({c.tgt_vocab}));
}

const float* Transformer::position_row(int64_t t) const {
  if (t < 0 || t >= cfg_.max_positions)
    throw std::invalid_argument("transformer: position " + std::to_string(t) + " outside [0, max_positions = " +
                                std::to_string(cfg_.max_positions) + ")");
  const Tensor& table = tgt_learned_ ? tgt_learned_->weight : tgt_sin_->table;
  return table.data() + t * config_.embed;
}

Tensor Transformer::embed(const Tensor& ids, bool target, int64_t start) const {
  const int64_t L = ids.size(1);
  if (start + L > cfg_.max_positions)
    throw std::invalid_argument("transformer: " + std::string(target ? "target" : "source") + " positions up to " +
                                std::to_string(start + L) + " above max_positions = " + std::to_string(cfg_.max_positions));
  Tensor x = affine((target ? tgt_embed_ : src_embed_)->forward(ids), std::sqrt(float(config_.embed)));
  if (target) return tgt_learned_ ? tgt_learned_->forward(x, start) : tgt_sin_->forward(x, start);
  return src_learned_ ? src_learned_->forward(x, start) : src_sin_->forward(x, start);
}

Tensor Transformer::encode_rows(const Tensor& src, const PaddedRows& rows) const {
  return encoder_->forward_rows(pack_padded(embed(src, false), rows), rows);
}

Encoded Transformer::encode(const Tensor& src, const std::vector<int64_t>& lengths) const {
  detail::check_source("transformer encode", src, lengths, config_.src_vocab);
  const int64_t B = src.size(0), S = src.size(1), E = config_.embed, H = cfg_.heads, hd = E / H;
  const PaddedRows rows = padded_rows(lengths, S);
  Encoded e;
  e.memory.lengths() = rows.lengths_tensor;
  const Tensor memory = encode_rows(src, rows);        // [N, E]
  e.memory.values() = unpack_padded(memory, rows);     // [B, S, E], zeros past each length
  {
    NoGradGuard no_grad;  // the searches' per-sentence keys and values, head-split: [B, H, S, hd] (zeros at padding)
    const Tensor values = memory.detach();
    for (size_t l = 0; l < decoder_->layers.size(); ++l) {
      const nn::MultiHeadAttention& a = *decoder_->layers[l]->multihead_attn;
      for (int which = 1; which <= 2; ++which) {
        Tensor w = a.in_proj_weight.narrow0(which * E, E), bias = a.in_proj_bias.defined() ? a.in_proj_bias.narrow0(which * E, E) : Tensor();
        Tensor kv = permute(reshape(unpack_padded(linear(values, w, bias), rows), {B, S, H, hd}), {0, 2, 1, 3});
        e.memory[(which == 1 ? "cross_k." : "cross_v.") + std::to_string(l)] = kv;
      }
    }
  }
  e.state.set("prefix", Tensor::zeros({B, cfg_.max_positions}));
  return e;
}

namespace {

// The maps of `family` over `layers` layers of `heads` heads: the last layer's mean first, then layer by
// layer each head and the layer's mean.
std::vector<std::string> layered_maps(const std::string& family, int64_t layers, int64_t heads) {
  std::vector<std::string> maps = {layered_map_name(family, layers, 0)};
  for (int64_t l = 1; l <= layers; ++l) {
    for (int64_t h = 1; h <= heads; ++h) maps.push_back(layered_map_name(family, l, h));
    if (l < layers) maps.push_back(layered_map_name(family, l, 0));
  }
  return maps;
}

}  // namespace

std::vector<std::string> Transformer::attention_maps() const {
  return layered_maps(kCrossFamily, cfg_.decoder_layers, cfg_.heads);
}

std::vector<std::string> Transformer::encoder_attention_maps() const {
  return layered_maps(kSelfFamily, cfg_.encoder_layers, cfg_.heads);
}

Tensor Transformer::encoder_attention(const Tensor& src, const std::vector<int64_t>& lengths,
                                      const std::string& name) const {
  const std::optional<LayeredMap> m = parse_layered_map(resolve_encoder_map(*this, name));
  detail::check_source("transformer encoder_attention", src, lengths, config_.src_vocab);
  NoGradGuard no_grad;
  std::vector<nn::TransformerLayerWeights> weights;  // the unfused path: per layer [B, H, S, S]
  encoder_->forward(embed(src, false), detail::lengths_tensor(lengths), &weights);
  const Tensor& w = weights.at(size_t(m->layer - 1)).self_attn;
  const int64_t B = w.size(0), S = w.size(2);
  Tensor out = m->head > 0 ? reshape(slice(w, 1, m->head - 1, 1), {B, S, S}).clone() : mean(w, 1);
  for (int64_t b = 0; b < B; ++b)  // a padded query row attends to the keys as well: zero it
    for (int64_t i = lengths[size_t(b)]; i < S; ++i) std::fill_n(out.data() + (b * S + i) * S, S, 0.0f);
  return out;
}

StepOutput Transformer::step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                             StepDetail) const {
  const Tensor& values = memory.values();
  const int64_t N = prev.size(0), S = values.size(1), E = config_.embed, H = cfg_.heads, P = cfg_.max_positions;
  if (t < 0 || t >= P)
    throw std::invalid_argument("transformer step: t = " + std::to_string(t) + " outside [0, max_positions = " +
                                std::to_string(P) + ")");
  Tensor prefix = state.live("prefix").detach().clone();  // [N, P] ids
  if (prefix.size(0) != N || values.size(0) != N)
    throw std::invalid_argument("transformer step: prev " + prev.shape().str() + ", prefix " + prefix.shape().str() +
                                ", memory values " + values.shape().str() + " differ in rows");
  for (int64_t i = 0; i < N; ++i) prefix.data()[i * P + t] = prev.data()[i];
  Tensor ids = Tensor::empty({N, t + 1});
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j <= t; ++j) ids.data()[i * (t + 1) + j] = prefix.data()[i * P + j];
  std::vector<nn::TransformerLayerWeights> weights;
  Tensor h = decoder_->forward(embed(ids, true), values, memory.lengths(), Tensor(), &weights);  // [N, t+1, E]
  Tensor last = reshape(slice(h, 1, t, 1), {N, E});
  StepOutput out;
  out.log_probs = log_softmax(linear(last, out_w_, out_b_), -1);
  std::vector<Tensor> per_layer;  // [N, H, S]: position t's weights over the memory
  for (const nn::TransformerLayerWeights& w : weights) per_layer.push_back(reshape(slice(w.multihead_attn, 2, t, 1), {N, H, S}));
  const int64_t L = int64_t(per_layer.size());
  out.attention.add(transformer_map_name(L, 0), mean(per_layer.back(), 1));
  for (int64_t l = 1; l <= L; ++l) {
    for (int64_t hh = 1; hh <= H; ++hh)
      out.attention.add(transformer_map_name(l, hh), reshape(slice(per_layer[size_t(l - 1)], 1, hh - 1, 1), {N, S}));
    if (l < L) out.attention.add(transformer_map_name(l, 0), mean(per_layer[size_t(l - 1)], 1));
  }
  out.state.set("prefix", prefix);
  return out;
}

Tensor Transformer::forced_features(const data::Seq2SeqBatch& b) const {
  const PaddedRows src_rows = padded_rows(b.src_lengths, b.src.size(1));
  Tensor memory = encode_rows(b.src, src_rows);  // [Ns, E]
  PaddedRows memory_rows = src_rows;
  if (!b.src_rows.empty()) {  // examples that share a source read its positions
    std::vector<int64_t> lengths;
    for (int64_t r : b.src_rows) lengths.push_back(b.src_lengths.at(size_t(r)));
    memory_rows = padded_rows(lengths, src_rows.L);
    memory = pack_padded(select_rows(unpack_padded(memory, src_rows), b.src_rows), memory_rows);
  }
  const int64_t B = b.tgt_in.size(0), T = b.tgt_in.size(1), E = config_.embed;
  // bos + target: as many positions as tgt_out's non-padding (all T without tgt_out)
  std::vector<int64_t> tgt_lengths(size_t(B), b.tgt_out.defined() ? 0 : T);
  if (b.tgt_out.defined()) {
    if (b.tgt_out.numel() != B * T)
      throw std::invalid_argument("transformer: tgt_out " + b.tgt_out.shape().str() + " for tgt_in " + b.tgt_in.shape().str());
    for (int64_t i = 0; i < B; ++i)
      for (int64_t t = 0; t < T; ++t) tgt_lengths[size_t(i)] += b.tgt_out.data()[i * T + t] != float(config_.specials.pad);
  }
  const PaddedRows tgt_rows = padded_rows(tgt_lengths, T);
  Tensor h = decoder_->forward_rows(pack_padded(embed(b.tgt_in, true), tgt_rows), tgt_rows, memory, memory_rows);
  return reshape(transpose(unpack_padded(h, tgt_rows), 0, 1), {T * B, E});  // padding rows zero
}

std::shared_ptr<const PreparedDecoder> Transformer::prepare_decoder(int64_t max_rows,
                                                                   nn::StepWeightType compute) const {
  if (is_training()) throw std::logic_error("transformer decoder: the model is in training mode (dropout active)");
  return prepare_transformer(*this, max_rows, compute);
}

Encoded Transformer::encode_for_search(const Tensor& src, const std::vector<int64_t>& lengths,
                                       const PreparedDecoder* prepared) const {
  const auto* p = dynamic_cast<const TransformerPrepared*>(prepared);
  return p && !p->encoder.empty() ? encode_prepared(*this, *p, src, lengths) : encode(src, lengths);
}

std::unique_ptr<StepDecoder> Transformer::decoder(const EncoderMemory& memory, int64_t max_rows,
                                                  std::shared_ptr<const PreparedDecoder> prepared) const {
  if (is_training()) throw std::logic_error("transformer decoder: the model is in training mode (dropout active)");
  return make_transformer_decoder(*this, prepared ? std::move(prepared)
                                           : prepare_transformer(*this, max_rows, nn::StepWeightType::F32),
                                  memory);
}

}  // namespace attn::models
