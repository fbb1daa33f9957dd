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
// next tokens of each row and, when asked, one attention map over the source
// (a model reports any number, by name: attention_maps()). Rows
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
#include <utility>
#include <vector>

#include "attn/data/batch.h"
#include "attn/models/config.h"
#include "attn/models/decoder_state.h"
#include "attn/nn/module.h"
#include "attn/nn/step_weight_type.h"
#include "attn/tensor/random.h"

namespace attn::models {

struct Encoded {
  EncoderMemory memory;
  DecoderState state;  // the decoder's initial state, B rows
};

// What step() computes besides log-probabilities, attention maps and state.
enum class StepDetail {
  Weights,    // nothing more (searches, training: no extra work)
  Internals,  // also StepOutput's internals (attn explain)
};

// Tensors by name, in the order a model adds them (a step's attention maps and
// internals), each with the row axis first.
struct NamedTensors {
  std::vector<std::pair<std::string, Tensor>> items;
  // The tensor `name`, or nullptr when there is none.
  const Tensor* find(const std::string& name) const;
  // Appends `name` -> t; an undefined t is not added (an internal the step does not have).
  void add(const std::string& name, const Tensor& t);
  // The names, in order.
  std::vector<std::string> names() const;
};

// The name of the one attention map of rnnsearch, luong and show_attend_tell.
inline const std::string kAttentionMap = "attention";

// The names of StepOutput::internals that attn explain prints; a model fills
// those it has. They describe how its default map (attention.items[0]) was
// computed; a model with several maps may add the same for map M as
// "M.query", "M.scores", ... (explain reads those for M).
namespace internal {
inline const std::string kQuery = "query";        // [N, Q] the decoder state the scores read (rnnsearch: s_{i-1}; luong: h_t)
inline const std::string kScores = "scores";      // [N, S] alignment scores before the softmax, -inf where the key is
                                                  // hidden (past each length, outside a local window)
inline const std::string kContext = "context";    // [N, Dv] the context vector sum_j weights_j values_j
inline const std::string kWindow = "window";      // [N, 2] local attention: the visible source range [lo, hi)
                                                  // (float-encoded, lo == hi when empty)
inline const std::string kPosition = "position";  // [N] local-p's predicted position p_t
}  // namespace internal

struct StepOutput {
  Tensor log_probs;        // [N, V] log p(y_t | y_<t, x)
  NamedTensors attention;  // the step's attention maps, each [N, keys] (zeros past each length), in the order of
                           // Seq2SeqModel::attention_maps(): items[0] is the model's default. rnnsearch, luong,
                           // show_attend_tell: one, kAttentionMap [N, S] (the captioner: [N, cells])
  DecoderState state;      // the state after consuming the previous token (N rows)
  NamedTensors internals;  // StepDetail::Internals only (else empty): the names of namespace internal that the model
                           // has, detached from the tape (Q is the query size)
};

// One search step as the searches consume it (StepDecoder::step): per row,
// only the k most probable next tokens.
struct StepTop {
  int64_t k = 0;                 // tokens kept per row
  std::vector<int> tokens;       // [N * k] row i's best tokens at [i * k, i * k + k): logit (so log p) descending, ties by lower id
  std::vector<float> log_probs;  // [N * k] their log p(y_t | y_<t, x), as step()'s log_probs
  Tensor attention;              // [N, keys] the map StepDecoder::report_attention() asked for (zeros past each
                                 // length); undefined when it asked for none
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
  // The attention map step() reports in StepTop::attention from the next step
  // on: a name of the model's attention_maps() (resolve_attention_map), or ""
  // for none, the default: a search that keeps no alignments asks for none, so
  // a decoder copies out no map (and a model with many computes none it does
  // not need). The default stores the name in attention_map_; a decoder that
  // reports fewer maps than its model overrides it and throws
  // std::invalid_argument for a name it cannot report.
  virtual void report_attention(const std::string& map) { attention_map_ = map; }
  // From the next step on, only `tokens` (target ids, sorted, unique, in
  // [0, V)) may be produced, log p renormalised over them: a vocabulary
  // shortlist (decode/shortlist.h); empty: the whole vocabulary. The default
  // throws std::invalid_argument (a decoder without one); the built-in ones
  // compute the output layer over these rows only.
  virtual void restrict_vocabulary(const std::vector<int>& tokens);

protected:
  std::string attention_map_;  // report_attention()'s map, "" for none
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
  // encode() for a search whose decoder reads `prepared` (prepare_decoder()'s,
  // or null): a kind whose prepared weights hold its encoder's too (the
  // Transformer's in int8 / bf16) runs the encoder on them, in their type.
  // The default: encode(). No autograd.
  virtual Encoded encode_for_search(const Tensor& src, const std::vector<int64_t>& lengths,
                                    const PreparedDecoder* /*prepared*/) const {
    return encode(src, lengths);
  }

  // Decoder step t (0 at BOS) for N rows: memory of N rows (one per decoder
  // row), state of N rows, prev [N] ids (BOS at t = 0) -> a new state of N
  // rows (differentiable ops: the state is not updated in place).
  // StepDetail::Internals also fills StepOutput::internals with what the model
  // has (attn explain prints them); the default computes nothing beyond the
  // attention maps.
  virtual StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                          StepDetail detail = StepDetail::Weights) const = 0;

  // The names of the attention maps step() reports (StepOutput::attention, in
  // its order), the model's default first. The default: {kAttentionMap}, the
  // one map of every built-in kind.
  virtual std::vector<std::string> attention_maps() const;

  // The names of the encoder's self-attention maps (each source position
  // attending to every source position), the default first; none by default
  // (the RNN kinds). The Transformer's: "self.layer<l>.head<h>" / ".mean"
  // (models/attention_maps.h), the default the last layer's mean.
  virtual std::vector<std::string> encoder_attention_maps() const;
  // The encoder self-attention map `name` (one of encoder_attention_maps())
  // of src [B, S] ids with lengths [B] -> [B, S, S]: row i holds source
  // position i's weights over the positions j (each row within the length
  // sums to 1; zeros past the length, rows and columns). Computed on demand
  // (the encoder run again with its weights materialised), for inspection
  // only: training and the searches never store [S, S]. No autograd. Throws
  // std::invalid_argument for an unknown name (the default: always).
  virtual Tensor encoder_attention(const Tensor& src, const std::vector<int64_t>& lengths,
                                   const std::string& name) const;

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
  // max_rows rows whose products compute in `compute` (fp32, int8, bf16:
  // nn/step_weight_types.h), for callers that run many searches with
  // unchanged parameters (translate_lines, `attn translate`, the decode
  // benchmark). nullptr when the model has nothing to prepare (the default,
  // fp32 only: another type throws std::invalid_argument naming the kind).
  virtual std::shared_ptr<const PreparedDecoder> prepare_decoder(
      int64_t max_rows, nn::StepWeightType compute = nn::StepWeightType::F32) const;
  // Whether prepare_decoder() takes `compute` (the default: fp32 only)
  virtual bool searches_in(nn::StepWeightType compute) const { return compute == nn::StepWeightType::F32; }

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

// The attention map `name` of model.attention_maps(), or the model's default
// (the first) when `name` is empty (models/attention_maps.h: resolve_map, and
// choose_map for a map by layer and head). Throws std::invalid_argument naming `name`
// and listing the model's maps when it reports no map of that name.
std::string resolve_attention_map(const Seq2SeqModel& model, const std::string& name);
// The same over model.encoder_attention_maps(); also throws for a model without any.
std::string resolve_encoder_map(const Seq2SeqModel& model, const std::string& name);

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
