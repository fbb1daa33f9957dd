// Xu et al. 2015, "Show, Attend and Tell: Neural Image Caption Generation with
// Visual Attention" (ICML): a CNN turns the image into a grid of annotation
// vectors, an LSTM decoder attends over the grid at every word.
//
// Legend: B images, N decoder rows, H = W = image_size, G grid side, L = G*G
// cells, D annotation size (the last CNN block's channels), A attention size,
// E embedding, Hd decoder size, T target steps, V target vocabulary.
//
// Encoder: CnnEncoder (nn/cnn_encoder.h) images [B, 3, H, W] -> [B, L, D]
//          (cell g = row * G + col), plus a learned position vector per cell
//          P [L, D]: a = CNN(x) + P (not in the paper, whose VGG features come from a
//          224x224 crop with no relations to tell: the CNN's features say what is in
//          a cell, not where the cell is, and the captions name left / right / above /
//          below); keys U a_i + b [B, L, A] cached per batch
// Init:    h_0 = tanh(W_h mean_i a_i + b), c_0 = tanh(W_c mean_i a_i + b)   (sec. 3.1.2)
// Step t (y_0 = BOS):
//   e_ti = v^T tanh(U a_i + b + W h_{t-1})            additive score (eq. 4)
//   alpha_t = softmax(e_t)                             (eq. 5)
//   soft:  z_t = sum_i alpha_ti a_i                    (eq. 13)
//   hard:  z_t = a_s, s ~ Multinoulli(alpha_t) in training (eq. 8), s = argmax alpha_t at inference
//          (alpha_t from the same fused score and softmax as soft); in training a caption takes
//          soft's expected context at every step instead, with probability hard_expected_prob
//          (sec. 4.1: "with probability 0.5 for a given image, we set the sampled attention
//          location s~ to its expected value alpha"), and has no REINFORCE term then
//   none:  z_t = mean_i a_i, alpha_t uniform           (the no-attention baseline)
//   beta_t = sigmoid(f_beta h_{t-1}); z_t <- beta_t z_t (sec. 4.2.1, the gating scalar)
//   h_t, c_t = LSTM([E y_{t-1}; z_t], (h_{t-1}, c_t-1))
//   features_t = E y_{t-1} + L_h h_t + L_z z_t         (deep output, eq. 7), dropout
// Output (after the loop, one GEMM for all steps): p(y_t) = softmax(L_o features_t + b)
//
// Loss (training mode; eval mode returns the cross-entropy alone, which is
// what validation's perplexity reads), normalised per target token like the
// cross-entropy so that every term is the paper's per-caption term summed
// over the batch and divided by its tokens:
//   cross-entropy (label smoothing as configured)
//   + attention_reg * sum_b sum_i (1 - sum_t alpha_bti)^2 / tokens      (eq. 14; soft and hard)
//   hard: + REINFORCE (eq. 12): -(reinforce_weight/tokens) sum_b drawn_b sum_t (R_bt - n_bt * baseline) log alpha_bt(s_bt),
//         R_bt = sum_{t' >= t} log p(y_bt' | s_b, a) the reward to go (no smoothing; the words
//         before t do not depend on s_t, so leaving them out keeps eq. 12's expectation and
//         drops their variance), n_bt its tokens, baseline the moving average of
//         log p(y_b | s_b, a) / len_b over the drawn captions (a buffer, saved in checkpoints: named_buffers()
//         "reinforce_baseline"), drawn_b 0 for a caption that took the expected context
//         - entropy_bonus * sum_bt H(alpha_bt) / tokens
//   padded steps count in none of the sums.
#pragma once
#include <memory>
#include <vector>

#include "attn/models/seq2seq.h"
#include "attn/models/show_attend_tell/show_attend_tell_config.h"
#include "attn/nn/cnn_encoder.h"
#include "attn/nn/layers.h"
#include "attn/nn/rnn.h"

namespace attn::models {

class ShowAttendTell : public Seq2SeqModel {
public:
  // Validates `config` (type show_attend_tell); parameters from `init`; the
  // hard attention's cells drawn from a stream "attention_rng" seeded from
  // dropout_seed (saved in checkpoints with the dropout stream).
  ShowAttendTell(const ModelConfig& config, Rng& init, uint64_t dropout_seed);

  // src: images [B, 3, H, W] (H = W = image_size, normalised), lengths [B]
  // (not read: every image has L cells; memory.lengths says L) -> memory
  // values a [B, L, D], keys [B, L, A] (none: = values), lengths [B] = L; state {h [B, Hd], c [B, Hd]}.
  Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override;
  // prev [N] -> log_probs [N, V], attention {"attention": [N, L]} (alpha_t: for hard attention the
  // distribution the cell is drawn from / the argmax of), state {h, c}; Internals:
  // query h_{t-1} [N, Hd], scores e_t [N, L], context [N, D] before the gate.
  StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                  StepDetail detail = StepDetail::Weights) const override;
  // b.src images [B, 3, H, W], b.tgt_in [B, T] -> [T * B, E] (time-major)
  Tensor forced_features(const data::Seq2SeqBatch& b) const override;
  OutputLayer output_layer() const override { return {out_w_, out_b_}; }

  // Searches run the fused step (show_attend_tell_search.h), not step(): its
  // products in the compute type over weights prepared once, the state {h, c}
  // updated in place. step() stays the differentiable reference (attn explain's
  // replay, training) that the fused step equals in fp32 up to rounding.
  // A decoder over `prepared` (prepare_decoder()'s), or over its own fp32
  // weights when null. Throws std::logic_error in training mode,
  // std::invalid_argument for weights another model prepared.
  std::unique_ptr<StepDecoder> decoder(const EncoderMemory& memory, int64_t max_rows,
                                       std::shared_ptr<const PreparedDecoder> prepared = nullptr) const override;
  // The step's weights prepared once for searches of up to max_rows rows
  // computing in `compute` (packed from kPackRows rows on). Throws
  // std::logic_error in training mode.
  std::shared_ptr<const PreparedDecoder> prepare_decoder(
      int64_t max_rows, nn::StepWeightType compute = nn::StepWeightType::F32) const override;
  // fp32, int8 and bf16 (every type of nn/step_weight_types.h)
  bool searches_in(nn::StepWeightType compute) const override;

  // The loss above, a scalar.
  Tensor loss(const data::Seq2SeqBatch& b, const LossOptions& options = {}) const override;

  // The loss's terms, each a scalar (undefined when the mode has none):
  struct LossTerms {
    Tensor cross_entropy;  // mean per target token
    Tensor regulariser;    // attention_reg * sum (1 - sum_t alpha)^2 / tokens (soft, hard; training)
    Tensor reinforce;      // hard, training: the REINFORCE surrogate (its gradient is the estimator's)
    Tensor entropy;        // hard, training: -entropy_bonus * sum H(alpha) / tokens
  };
  // Also updates the REINFORCE baseline (hard attention in training mode).
  LossTerms loss_terms(const data::Seq2SeqBatch& b, const LossOptions& options = {}) const;

  // The REINFORCE baseline: the moving average of log p(y | s, a) per token (0 before the first update).
  float baseline() const { return baseline_.data()[0]; }

protected:
  // Hard attention's cell per row: weights [N, L] (the differentiable alpha_t)
  // -> [N] cell indices: drawn from alpha_t with attention_rng in training,
  // argmax at inference. Virtual so that a test can fix the cells and enumerate
  // every choice (the exact expected gradient the REINFORCE estimator targets).
  virtual std::vector<int64_t> choose_cells(const Tensor& weights) const;

private:
  struct Attended {
    Tensor context;     // [N, D] z_t before the gate
    Tensor weights;     // [N, L] alpha_t
    Tensor scores;      // [N, L] e_t, detached (with need_scores)
    Tensor log_choice;  // [N] log alpha_t(s_t) (hard, training)
    Tensor entropy;     // [N] H(alpha_t) (hard, training)
  };
  struct DecodeStep {
    DecoderState state;  // "h" h_t, "c" c_t [N, Hd] (the decoder state's names)
    Tensor features;     // [N, E]
    Attended attended;
  };
  // Every step of a teacher-forced batch.
  struct ForcedRun {
    Tensor features;                  // [T * B, E]
    std::vector<Tensor> weights;      // [T] of [B, L]
    std::vector<Tensor> log_choice;   // [T] of [B] (hard, training)
    std::vector<Tensor> entropy;      // [T] of [B] (hard, training)
    std::vector<float> drawn;         // [B] 1 where the caption drew its cells, 0 where it took the expectation
  };
  // h [N, Hd] -> attention over memory's L cells; expected_rows [N] (hard,
  // training; may be undefined): 1 where the row takes the expected context
  Attended attend(const EncoderMemory& m, const Tensor& h, bool need_scores, const Tensor& expected_rows = {}) const;
  // emb [N, E], state at t-1 -> state at t and the step's features
  DecodeStep decoder_step(const EncoderMemory& m, const Tensor& emb, const DecoderState& s, bool need_scores,
                          const Tensor& expected_rows = {}) const;
  ForcedRun run_forced(const data::Seq2SeqBatch& b) const;
  Tensor drop(const Tensor& x) const;
  void check_eval() const;  // std::logic_error in training mode (the fused step has no dropout, draws no cell)

  const ShowAttendTellConfig& cfg_;  // config_'s section
  std::shared_ptr<nn::CnnEncoder> cnn_;
  Tensor grid_position_;                            // P [L, D]
  std::shared_ptr<nn::Linear> init_h_, init_c_;     // W_h, W_c [Hd, D]
  Tensor key_w_, key_b_, query_w_, score_v_;        // U [A, D], b [A], W [A, Hd], v [A] (undefined for none)
  std::shared_ptr<nn::Linear> gate_;                // f_beta [1, Hd]
  std::shared_ptr<nn::Embedding> embed_;            // E [V, E]
  std::shared_ptr<nn::LSTMCell> cell_;              // input E + D, hidden Hd
  std::shared_ptr<nn::Linear> out_h_, out_z_;       // L_h [E, Hd], L_z [E, D] (no bias)
  Tensor out_w_, out_b_;                            // L_o [V, E] (the embedding when tied), b [V]
  Rng& attention_rng_;
  mutable Tensor baseline_;                         // [2]: the moving average, the number of updates
};

}  // namespace attn::models
