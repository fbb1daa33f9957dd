// RNNsearch (Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by
// Jointly Learning to Align and Translate", ICLR; appendix A).
//
// Legend: B batch, S source length, T target steps, E embedding, He encoder
// size per direction, Dv = 2 He annotation size, Hd decoder size, A attention
// size, R readout size, V target vocabulary.
//
// Encoder: h_j = [h_j^fwd; h_j^bwd] from a bidirectional GRU over the source
// embeddings (encoder_layers stacked).                      [B, S, Dv]
// Keys:    U h_j + b_U, computed once per batch.            [B, S, A]
// Init:    s_0 = tanh(W_s mean_j h_j + b)   (decoder_init: mean)
//          s_0 = tanh(W_s h_1^bwd + b)      (decoder_init: backward, as the paper)
//          s_0 = 0                          (decoder_init: zero)
// Step i (y_0 = BOS):
//   e_ij = v^T tanh(W_a s_{i-1} + U h_j + b_U)   a_i = softmax_j(e_i) (j < length)
//   c_i  = sum_j a_ij h_j                         (attention::additive_step, fused)
//   s_i  = GRU([E y_{i-1}; c_i], s_{i-1})         (the previous state is the query)
// Deep output (readout, after the loop, one GEMM for all steps):
//   t_i  = tanh(W_o [s_i; c_i; E y_{i-1}] + b_o)  [R]
//   p(y_i) = softmax(W_y t_i + b_y)               [V]   (W_y = target embedding when tied)
// The readout uses s_i, the state after reading c_i, like most current
// implementations; the paper's t_i reads s_{i-1}.
#pragma once
#include <memory>

#include "attn/models/rnnsearch/rnnsearch_config.h"
#include "attn/models/rnn/rnn_text_model.h"
#include "attn/nn/layers.h"
#include "attn/nn/rnn.h"

namespace attn::models {

class RnnSearch : public RnnTextModel {
public:
  // Validates `config` (type rnnsearch); parameters from `init`.
  RnnSearch(const ModelConfig& config, Rng& init, uint64_t dropout_seed);

  Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override;
  StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                  StepDetail detail = StepDetail::Weights) const override;
  Tensor forced_features(const data::Seq2SeqBatch& b) const override;
  // decoder(): the fused search step (rnnsearch_search.h), which updates the
  // decoder state "s" [N, Hd] in place (RnnTextModel: prepared weights, errors).

private:
  std::shared_ptr<const PreparedDecoder> prepare_fused(StepLayout layout) const override;
  std::unique_ptr<StepDecoder> fused_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                             const EncoderMemory& memory, int64_t max_rows) const override;
  struct StepResult {
    Tensor s;        // [N, Hd] new decoder state
    Tensor context;  // [N, Dv]
    Tensor weights;  // [N, S]
    Tensor scores;   // [N, S] e_ij (-inf past each length) when asked for, else undefined
  };
  // emb [N, E] (embedding of the previous word), s [N, Hd] -> s', c, a (+ e when need_scores)
  StepResult decoder_step(const EncoderMemory& m, const Tensor& emb, const Tensor& s, bool need_scores = false) const;
  // s [M, Hd], c [M, Dv], emb [M, E] -> t [M, R] (dropout applied in training)
  Tensor readout(const Tensor& s, const Tensor& c, const Tensor& emb) const;

  const RnnSearchConfig& cfg_;  // config_'s section
  std::shared_ptr<nn::GRU> encoder_;
  std::shared_ptr<nn::Linear> init_;            // absent for decoder_init: zero
  std::shared_ptr<nn::Linear> key_;             // U [A, Dv], b_U [A]
  Tensor query_w_;                              // W_a [A, Hd]
  Tensor score_v_;                              // v [A]
  std::shared_ptr<nn::GRUCell> decoder_;        // input E + Dv
  std::shared_ptr<nn::Linear> readout_;         // W_o [R, Hd + Dv + E]
};

}  // namespace attn::models
