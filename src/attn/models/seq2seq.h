// The common interface of the translation models (rnnsearch, luong): encode a
// source batch once, then either run the decoder teacher-forced over a whole
// target batch (training: loss) or one step at a time (decoding: step).
//
// Legend: B = sentences, N = decoder rows (B, or B * beam in beam search),
// S = padded source length, T = padded target length (with BOS / EOS),
// Dv = annotation size (encoder output), A = attention key size, V = target
// vocabulary size. Ids are float-encoded, as everywhere in the engine.
//
// Decoding contract: encode() returns the encoder memory (per-sentence tensors
// by name) and the initial decoder state (per-row tensors by name) for B
// sentences. A search asks the model for a StepDecoder over the memory, which
// makes the search's state once (StepDecoder::start: buffers for the search's
// most rows and steps) and then, per step t (0 at BOS), reads the previous
// token of every row and updates that state in place, returning the k best
// next tokens of each row and the attention weights over the source. Rows
// read the memory through a row -> sentence map, so beams and finished
// sentences never copy it; the search reorders or drops rows of the state by
// index (DecoderState::gather) without knowing what its tensors mean. step()
// is the same step as composable, differentiable ops (attn explain's replay,
// the reference the tests hold the fused decoders to), which returns a new
// state instead of updating one.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/data/batch.h"
#include "attn/models/config.h"
#include "attn/models/decoder_state.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::models {

struct Encoded {
  EncoderMemory memory;
  DecoderState state;  // the decoder's initial state, B rows
};

// What step() computes besides log-probabilities, weights and state.
enum class StepDetail {
  Weights,    // nothing more (searches, training: no extra work)
  Internals,  // also StepOutput's attention internals (attn explain)
};

struct StepOutput {
  Tensor log_probs;    // [N, V] log p(y_t | y_<t, x)
  Tensor weights;      // [N, S] attention weights of this step (zeros past each length)
  DecoderState state;  // the state after consuming the previous token (N rows)
  // The attention internals, with StepDetail::Internals (else undefined); Q is
  // the query size, detached from the tape:
  Tensor query;     // [N, Q] the decoder state the scores read (rnnsearch: s_{i-1}; luong: h_t)
  Tensor scores;    // [N, S] alignment scores before the softmax, -inf where the key is hidden
                    // (past each length, outside a local window)
  Tensor context;   // [N, Dv] the context vector sum_j weights_j values_j
  Tensor window;    // [N, 2] local attention: the visible source range [lo, hi) (float-encoded,
                    // lo == hi when empty); undefined for global attention
  Tensor position;  // [N] local-p's predicted position p_t; undefined otherwise
};

// One search step as the searches consume it (StepDecoder::step): per row,
// only the k most probable next tokens.
struct StepTop {
  int64_t k = 0;                 // tokens kept per row
  std::vector<int> tokens;       // [N * k] row i's best tokens at [i * k, i * k + k): logit (so log p) descending, ties by lower id
  std::vector<float> log_probs;  // [N * k] their log p(y_t | y_<t, x), as step()'s log_probs
  Tensor weights;                // [N, S] attention weights of this step (zeros past each length)
};

// A model's decoder prepared for one search over one encoded batch (weights
// laid out for the row count, buffers reused from step to step); made by
// Seq2SeqModel::decoder(). Decoder rows read the encoder memory through a
// row -> sentence map, so beams and finished sentences never copy the memory.
class StepDecoder {
public:
  virtual ~StepDecoder() = default;
  // The search's state, made once: `initial` (encode()'s, B rows) copied into
  // buffers of max_rows rows, plus whatever the model keeps across steps (a
  // cache of max_steps positions, say). The default copies `initial` only.
  virtual DecoderState start(const DecoderState& initial, int64_t max_rows, int64_t max_steps);
  // Step t (0 at BOS) for N rows: rows [N] the sentence (row of the memory
  // given to decoder()) each decoder row belongs to, state with N live rows,
  // updated in place to the state after consuming prev [N] (the previous
  // tokens, BOS at t = 0), k in [1, V]. The result is valid until the next
  // call. Throws std::invalid_argument on inconsistent sizes.
  virtual const StepTop& step(const std::vector<int64_t>& rows, DecoderState& state, const std::vector<int>& prev,
                              int64_t k, int64_t t) = 0;
};

// Weights a model lays out once for any number of searches (packed panels,
// the embedding's products folded into lookup tables): made by
// Seq2SeqModel::prepare_decoder(), opaque to everyone else. They are copies:
// valid while the model's parameters stay unchanged.
class PreparedDecoder {
public:
  virtual ~PreparedDecoder() = default;
};

struct LossOptions {
  float label_smoothing = 0.0f;  // PyTorch's label_smoothing of cross-entropy
};

class Seq2SeqModel : public nn::Module {
public:
  const ModelConfig& config() const { return config_; }

  // src [B, S] ids with lengths[b] in [1, S] (text models) or images [B, 3, H, W]
  // (show_attend_tell: lengths [B] not read) -> memory and initial state for B rows.
  virtual Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const = 0;

  // Decoder step t (0 at BOS) for N rows: memory of N rows (one per decoder
  // row), state of N rows, prev [N] ids (BOS at t = 0) -> a new state of N
  // rows (differentiable ops: the state is not updated in place).
  // StepDetail::Internals also fills StepOutput's attention internals (every
  // model kind must); the default computes nothing beyond the weights.
  virtual StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                          StepDetail detail = StepDetail::Weights) const = 0;

  // A decoder for searches over `memory` (as encode() returned it, B sentences)
  // with at most max_rows decoder rows per step. The default runs step() on
  // the memory rows that the step's rows select and the state's live rows,
  // copies its new state back into them, and takes the top k of its
  // log-probabilities; RnnSearch and Luong fuse the whole step and update the
  // state in place (rnnsearch_search.h, luong_search.h). A model kind with a
  // cache overrides StepDecoder::start to add it (tests/test_decoder_state.cpp).
  // No autograd: call it under NoGradGuard, with the model in eval mode.
  // `prepared` (from prepare_decoder(), or nullptr: the decoder prepares its
  // own) lets many searches share the weight preparation.
  virtual std::unique_ptr<StepDecoder> decoder(const EncoderMemory& memory, int64_t max_rows,
                                               std::shared_ptr<const PreparedDecoder> prepared = nullptr) const;

  // The weights decoder() reads, laid out once for searches of up to
  // max_rows rows, for callers that run many searches with unchanged
  // parameters (translate_lines, `attn translate`, the decode benchmark).
  // nullptr when the model has nothing to prepare (the default).
  virtual std::shared_ptr<const PreparedDecoder> prepare_decoder(int64_t max_rows) const;

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

  // The training loss of the teacher-forced batch, a scalar: by default the
  // mean cross-entropy per target token (padding ignored, label smoothing as
  // PyTorch's), the vocabulary projection of all steps and the loss run as one
  // fused op (models/output_loss.h), which never keeps the [T * B, V] logits.
  // A model kind with terms of its own (a regulariser on its attention, a
  // REINFORCE term) overrides it and adds them to cross_entropy(); the
  // trainer only ever calls loss().
  virtual Tensor loss(const data::Seq2SeqBatch& b, const LossOptions& options = {}) const;

  // The default loss above: mean cross-entropy per target token.
  Tensor cross_entropy(const data::Seq2SeqBatch& b, const LossOptions& options = {}) const;

  // The Rng that draws the model's dropout masks: the stream "dropout_rng" of
  // named_rngs(), which checkpoints save with every other stream of its layers.
  Rng& dropout_rng() const { return dropout_rng_; }

protected:
  // cross_entropy() of features the caller already has ([T * B, R], time-major,
  // as forced_features(b) returns them): a loss override that runs the decoder
  // once for its own terms reads the cross-entropy from the same run.
  Tensor cross_entropy_of(const Tensor& features, const data::Seq2SeqBatch& b, const LossOptions& options) const;

  Seq2SeqModel(const ModelConfig& config, uint64_t dropout_seed)
      : config_(config), dropout_rng_(register_rng("dropout_rng", dropout_seed)) {}
  ModelConfig config_;
  Rng& dropout_rng_;
};

// Builds the model of the kind `config.type` names in the table of kinds
// (models/kinds.h), parameters drawn from `init`; dropout
// masks from an Rng seeded with `dropout_seed`. Validates the config.
std::unique_ptr<Seq2SeqModel> make_model(const ModelConfig& config, Rng& init, uint64_t dropout_seed);

// ---- row bookkeeping for decoders and batches that share sources ----

// out[i] = x[rows[i]] along axis 0: x [M, ...] -> [rows.size(), ...]. A copy
// when x needs no gradient (search); differentiable otherwise (its backward
// sums the rows' gradients into each source row: a batch whose examples share
// a source, data::Seq2SeqBatch::src_rows).
Tensor select_rows(const Tensor& x, const std::vector<int64_t>& rows);
EncoderMemory select_rows(const EncoderMemory& m, const std::vector<int64_t>& rows);
DecoderState select_rows(const DecoderState& s, const std::vector<int64_t>& rows);

// tgt [B, T] ids -> [T, B] ids (time-major), no autograd.
Tensor time_major(const Tensor& ids);

}  // namespace attn::models
