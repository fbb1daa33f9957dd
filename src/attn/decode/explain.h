// `attn explain`: one sentence's decoding, one decoder step at a time, the way
// the attention tutorials walk through it (alignment scores, softmax weights,
// context vector, output word, then the next step).
//
// The search (decode::search, greedy or beam) picks the path; the path is then
// replayed teacher-forced through the model's encode() and plain step() with
// StepDetail::Internals for the one sentence, which records per step the
// weights of one attention map (ExplainOptions::attention_map), the internals
// the model gives for it (query, scores, context; a local window and
// position) and the next-token distribution. The
// replay feeds the search's tokens, so the tokens are the search's; its
// weights are the search's alignments up to float rounding (the fused search
// step of rnnsearch computes the same equations in another order;
// tests/test_explain.cpp holds them within 1e-5).
//
// An image model (show_attend_tell) is explained the same way over its grid:
// the source positions are the G x G cells (cell g = row * G + col, labelled
// "r<row>c<col>"), the caption is the path (explain_image).
//
// Legend: S source pieces (or grid cells), T decoder steps (target pieces + 1
// for EOS when the path finished), Q query size, V target vocabulary.
//
// Internal header (nlohmann in the interface): not installed.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/decode/model_dir.h"

namespace attn::decode {

struct ExplainOptions {
  int beam = 1;                 // 1: greedy search; K > 1: beam search, its best hypothesis is explained
  int top_k = 5;                // next-token candidates listed per step (>= 1)
  bool words = false;           // merge SentencePiece pieces into words (merge_words)
  double max_len_ratio = 2.0;   // the search's length limit, as SearchOptions
  int64_t max_len_offset = 5;   // see max_len_ratio
  int64_t max_src_pieces = 250; // a text of more source pieces is refused (std::invalid_argument), never cut
  // the search's products' element type (SearchOptions::compute); the step-by-step
  // replay that records the weights and candidates runs in fp32 (model.step)
  nn::StepWeightType compute = nn::StepWeightType::F32;
  std::string attention_map;    // the map explained ("": the model's default; an unknown one is refused,
                                // std::invalid_argument listing the model's maps)
  std::string self_attention_map;  // the encoder self-attention map of "self_attention" (a model with
                                   // encoder_attention_maps() only; "": its default; one given to a model
                                   // without such maps, or unknown, is refused: std::invalid_argument)
};

// One decoder step of the explained path, over source pieces. The weights are
// the explained map's; the internals (optional: what the model's step()
// gives, models::internal) are how that map was computed.
struct ExplainStep {
  std::optional<std::vector<float>> query;            // [Q] the decoder state the scores read
  std::optional<std::vector<float>> scores;           // [S] before the softmax, -inf where hidden
  std::vector<float> weights;                         // [S] the attention weights
  std::optional<double> context_norm;                 // |c_t|
  std::optional<double> position;                     // local-p's predicted p_t
  std::optional<std::pair<int64_t, int64_t>> window;  // local attention's visible source range [lo, hi)
  std::vector<std::pair<int, float>> top_k;           // [k] (token, probability), best first
  int chosen = 0;                                     // the path's token (EOS at a finished path's last step)
  float chosen_prob = 0;                              // its probability
};

struct Explanation {
  std::string attention_map;       // the map the steps' weights are (resolved: never "")
  std::string self_attention_map;  // the encoder map of self_attention ("" when the model has none)
  std::vector<float> self_attention;  // [S, S] row i: source i's weights over every source j (empty without)
  std::vector<int> src;            // [S] source ids (empty for an image)
  std::vector<int> tokens;         // the chosen path without EOS
  bool finished = false;           // the path ended with EOS (else: the length limit)
  std::vector<ExplainStep> steps;  // [T]
};

// Searches src (ids, S >= 1) with o.beam and replays the best hypothesis.
// Throws std::invalid_argument on options out of range (beam < 1, top_k < 1).
Explanation explain_ids(const models::Seq2SeqModel& model, const std::vector<int>& src, const ExplainOptions& o);

// The same for any one source the model's encode() reads: src [1, ...] (ids
// [1, S] or pixels [1, 3, H, W]) with `positions` S attended positions.
Explanation explain_source(const models::Seq2SeqModel& model, const Tensor& src, int64_t positions,
                           const ExplainOptions& o);

// The explanation as the JSON object of docs/explain-and-figures.md (pieces; words
// when o.words), for a loaded model: "attention_map" names the map of the
// steps' weights; "self_attention" ({"map", "weights" [S][S]}) is there only
// for a model with encoder self-attention maps.
nlohmann::json explanation_json(const Explanation& e, const TranslationModel& m, const ExplainOptions& o);

// One sentence's explanation as JSON. Throws std::invalid_argument with a
// clear message for bad input (invalid UTF-8, an empty text, bad options).
nlohmann::json explain_text(const TranslationModel& m, const std::string& text, const ExplainOptions& o);

// One image file's explanation as JSON (an image model: decode/captioner.h's
// image_model_input): src_tokens are the grid's cells, "grid" [Gh, Gw], "image"
// the path, "caption" the caption (where a text explanation has "translation");
// the length limit is a caption's (CaptionOptions::max_words), not the grid's.
// Throws std::invalid_argument for a text model or bad options,
// std::runtime_error naming a file that cannot be read.
nlohmann::json explain_image(const TranslationModel& m, const std::string& path, const ExplainOptions& o);

// The same for an image already decoded and resized (an upload:
// decode/captioner.h's picture_batch): pixels [1, 3, H, W] at the model's
// image size; the JSON has no "image" field. Throws std::invalid_argument for
// a text model, pixels of another shape or bad options.
nlohmann::json explain_pixels(const TranslationModel& m, const Tensor& pixels, const ExplainOptions& o);

// The JSON of pieces -> the JSON of words (docs/explain-and-figures.md, --words): a
// piece starting with "▁" starts a word. Source columns: a word's weight is
// the sum of its pieces' weights, its score log sum exp of its pieces' visible
// scores (null when none is visible). Target: the steps of one word become one
// step whose weights are the mean of its pieces' rows (each score the mean over
// the steps where it is not null); query,
// query_norm, context_norm, position and top_k are its first piece's, the
// window the union of its pieces' windows, chosen the word and chosen_prob the
// product of its pieces' probabilities. "self_attention" merges both axes:
// a word's row is the mean of its pieces' rows, a word's column the sum of
// its pieces' columns (rows still sum to 1). Throws std::invalid_argument when the
// object lacks a field the merge reads. An image's cells ("grid") stay one
// column each; only its caption's pieces merge.
nlohmann::json merge_words(const nlohmann::json& pieces);

// The readable form of an explanation object (pieces or words): a header, then
// per step a table of source tokens with score, weight and a bar of the
// weight (for an image: the scores and the weights as Gh x Gw grids, and the
// cell with the most weight), the top-k next tokens and the chosen one.
std::string explanation_table(const nlohmann::json& e);

}  // namespace attn::decode
