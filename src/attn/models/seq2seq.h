// The common interface of the translation models (rnnsearch, luong): encode a
// source batch once, then either run the decoder teacher-forced over a whole
// target batch (training: loss) or one step at a time (decoding: step).
//
// Legend: B = sentences, N = decoder rows (B, or B * beam in beam search),
// S = padded source length, T = padded target length (with BOS / EOS),
// Dv = annotation size (encoder output), A = attention key size, V = target
// vocabulary size. Ids are float-encoded, as everywhere in the engine.
//
// Decoding contract: encode() returns the encoder memory and the initial
// decoder state for B sentences; step() consumes the previous token of every
// row and returns log-probabilities of the next one plus the attention
// weights over the source. Every tensor of EncoderMemory and DecoderState
// has the row axis first, so beam search can reorder / repeat rows with
// select_rows() without knowing what the tensors mean.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "attn/data/toy_tasks.h"
#include "attn/models/config.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::models {

struct EncoderMemory {
  Tensor values;   // [N, S, Dv] encoder outputs (annotations), zeros past each length
  Tensor keys;     // [N, S, K] the keys the score function reads, precomputed once per batch
                   // (rnnsearch: U h_j + b; luong general: W h_j; luong dot: = values)
  Tensor lengths;  // [N] float-encoded source lengths
};

struct DecoderState {
  std::vector<Tensor> tensors;  // model-specific, each [N, ...] (e.g. rnnsearch: {s}; luong: {h_l..., c_l..., h~})
};

struct Encoded {
  EncoderMemory memory;
  DecoderState state;  // the decoder's initial state
};

struct StepOutput {
  Tensor log_probs;    // [N, V] log p(y_t | y_<t, x)
  Tensor weights;      // [N, S] attention weights of this step (zeros past each length)
  DecoderState state;  // the state after consuming the previous token
};

struct LossOptions {
  float label_smoothing = 0.0f;  // PyTorch's label_smoothing of cross-entropy
};

class Seq2SeqModel : public nn::Module {
public:
  const ModelConfig& config() const { return config_; }

  // src [B, S] with lengths[b] in [1, S] -> memory and initial state for B rows.
  virtual Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const = 0;

  // One decoder step for N rows: prev [N] ids (BOS at the first step).
  virtual StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev) const = 0;

  // Teacher forcing: the features the vocabulary projection reads, for every
  // target position, time-major: b.tgt_in [B, T] -> [T * B, R] (row t * B + b
  // predicts b.tgt_out[b, t]). The decoder runs step by step (attention
  // depends on the previous state); the readout runs once for all steps.
  virtual Tensor forced_features(const data::Seq2SeqBatch& b) const = 0;

  // The vocabulary projection: logits = features W^T + b.
  struct OutputLayer {
    Tensor weight;  // [V, R] (the target embedding when tied)
    Tensor bias;    // [V]
  };
  virtual OutputLayer output_layer() const = 0;

  // Teacher-forced logits [T * B, V] (time-major, as forced_features).
  Tensor forced_logits(const data::Seq2SeqBatch& b) const;

  // Mean cross-entropy per target token (padding ignored, label smoothing as
  // PyTorch's) of the teacher-forced batch: a scalar. The vocabulary
  // projection of all steps and the loss run as one fused op
  // (models/output_loss.h), which never keeps the [T * B, V] logits.
  Tensor loss(const data::Seq2SeqBatch& b, const LossOptions& options = {}) const;

  // The Rng that draws dropout masks (its state goes into checkpoints).
  Rng& dropout_rng() const { return dropout_rng_; }

protected:
  Seq2SeqModel(const ModelConfig& config, uint64_t dropout_seed) : config_(config), dropout_rng_(dropout_seed) {}
  ModelConfig config_;
  mutable Rng dropout_rng_;
};

// Builds the model `config.type` names, parameters drawn from `init`; dropout
// masks from an Rng seeded with `dropout_seed`. Validates the config.
std::unique_ptr<Seq2SeqModel> make_model(const ModelConfig& config, Rng& init, uint64_t dropout_seed);

// ---- row bookkeeping for decoders (no autograd) ----

// out[i] = x[rows[i]] along axis 0: x [M, ...] -> [rows.size(), ...]
Tensor select_rows(const Tensor& x, const std::vector<int64_t>& rows);
EncoderMemory select_rows(const EncoderMemory& m, const std::vector<int64_t>& rows);
DecoderState select_rows(const DecoderState& s, const std::vector<int64_t>& rows);

// tgt [B, T] ids -> [T, B] ids (time-major), no autograd.
Tensor time_major(const Tensor& ids);

}  // namespace attn::models
