// Luong, Pham & Manning 2015, "Effective Approaches to Attention-based Neural
// Machine Translation" (EMNLP): stacked LSTM (or GRU) encoder and decoder,
// attention after the recurrent step, input feeding.
//
// Legend: B batch, S source length, T target steps, E embedding, He encoder
// size per direction, Dv = D He annotation size (D = 2 when bidirectional),
// Hd decoder size, L decoder layers, A concat-score size, V target vocabulary.
//
// Encoder: stacked (optionally bidirectional) LSTM/GRU -> h̄_s [B, S, Dv]
// Init:    every decoder layer starts from tanh(W mean_s h̄_s + b) (decoder_init
//          mean or backward), or zeros; LSTM cells start at c = 0
// Step t (y_0 = BOS, h̃_0 = 0):
//   h_t = stacked cell([E y_{t-1}; h̃_{t-1}], h_{t-1})     input feeding (sec. 3.3)
//   score(h_t, h̄_s) = h_t . h̄_s                 dot
//                   = h_t . (W_a h̄_s) / sqrt(Hd) general (W_a h̄_s / sqrt(Hd) cached per batch)
//                   = v_a^T tanh(W_a [h_t; h̄_s]) concat (the fused additive step,
//                                                 W_a h̄_s half cached per batch)
//   a_t = softmax over the source (global), or over the window [p_t - D, p_t + D]:
//         local-m p_t = t; local-p p_t = S sigmoid(v_p^T tanh(W_p h_t)) with the
//         weights multiplied by exp(-(s - p_t)^2 / (2 (D/2)^2)) (eq. 9-10)
//   c_t = sum_s a_ts h̄_s
//   h̃_t = tanh(W_c [c_t; h_t])                  (eq. 5), dropout
// Output (after the loop, one GEMM for all steps): p(y_t) = softmax(W_s h̃_t + b)
//
// The general score's 1 / sqrt(Hd) is not in the paper. It changes no function
// the model can express (W_a absorbs a constant), only how it trains: without
// it, Adam (lr 2e-3) grew the bilinear form's scores until the softmax
// saturated within the first epoch of Multi30k, and the attention collapsed
// onto the last source piece for good (entropy 0.01 nats, BLEU 20 after 13
// minutes where dot and concat reached 30 in 10; BENCHMARKS.md, "Luong's
// scores in 10 minutes"). Scaled, it learns alignments and trains fastest of the three.
#pragma once
#include <memory>

#include "attn/models/luong/luong_config.h"
#include "attn/models/rnn/rnn_text_model.h"
#include "attn/nn/layers.h"
#include "attn/nn/rnn.h"

namespace attn::models {

struct LuongLoopWeights;  // luong_decoder.h (internal: not installed)

class Luong : public RnnTextModel {
public:
  // Validates `config` (type luong); parameters from `init`.
  Luong(const ModelConfig& config, Rng& init, uint64_t dropout_seed);

  Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override;
  StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                  StepDetail detail = StepDetail::Weights) const override;
  // The decoder loop as one fused op (luong_decoder.h).
  Tensor forced_features(const data::Seq2SeqBatch& b) const override;
  // The same features from T composable steps (decoder_step, the ops step()
  // runs): the reference the tests hold the fused loop to. [T * B, Hd]
  Tensor forced_features_by_steps(const data::Seq2SeqBatch& b) const;
  // decoder(): the fused search step (luong_search.h; RnnTextModel: prepared weights, errors).

private:
  std::shared_ptr<const PreparedDecoder> prepare_fused(StepLayout layout) const override;
  std::unique_ptr<StepDecoder> fused_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                             const EncoderMemory& memory, int64_t max_rows) const override;
  // Decoder state: luong_state's names (luong_search.h), h and c (LSTM only) per
  // layer and h̃, each [N, Hd]; local-m centres its window on the step number t.
  struct StepResult {
    DecoderState state;  // at step t
    Tensor weights;      // [N, S]
    NamedTensors internals;  // query, scores, context, window, position (with need_internals)
  };
  // emb [N, E], state at t-1 -> state at t (+ the attention internals when need_internals)
  StepResult decoder_step(const EncoderMemory& m, const Tensor& emb, const DecoderState& s, int64_t t,
                          bool need_internals = false) const;
  Tensor feed(const DecoderState& s) const;  // h̃ [N, Hd]
  LuongLoopWeights loop_weights() const;
  bool lstm() const { return cfg_.cell == CellType::Lstm; }

  const LuongConfig& cfg_;  // config_'s section
  std::shared_ptr<nn::GRU> enc_gru_, dec_gru_;      // cell: gru
  std::shared_ptr<nn::LSTM> enc_lstm_, dec_lstm_;   // cell: lstm (the decoder's weights run one step at a time)
  std::shared_ptr<nn::Linear> init_;                 // absent for decoder_init: zero
  Tensor general_w_;                                 // general: W_a [Hd, Dv]
  Tensor concat_q_, concat_k_, concat_v_;            // concat: W_a's query part [A, Hd], key part [A, Dv], v_a [A]
  Tensor local_wp_, local_vp_;                       // local-p: W_p [A, Hd], v_p [A]
  std::shared_ptr<nn::Linear> combine_;              // W_c [Hd, Dv + Hd] (no bias, as the paper)
};

}  // namespace attn::models
