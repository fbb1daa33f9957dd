// Captioning image files with a trained image model (issue 15: Show, Attend
// and Tell): the files read and resized into one pixel batch, the model's
// encode over the pixels and the same greedy / beam search as translation
// (search.h), and each caption's per-word attention over the grid, ready for
// viz/image_attention.h and eval/caption_metrics.h.
//
// The one thing this file needs from a model kind is what it reads:
// image_model_input() (the hook a model kind fills in; text models have none).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "attn/image/image.h"
#include "attn/models/config.h"
#include "attn/models/seq2seq.h"

namespace attn::decode {

// What an image model reads, from its config.
struct ImageModelInput {
  int width = 0, height = 0;    // pixels every image is resized to (aspect ratio not kept)
  int grid_h = 0, grid_w = 0;   // Gh x Gw: the attention grid, cell g = row * Gw + col (nn/cnn_encoder.h)
  image::Normalization normalization;  // applied after resizing (image/image.h)
};

// The hook: the input of the model `c` describes, or nullopt when it is not an
// image model (rnnsearch and luong read text). A model kind that reads images
// returns its image size, grid and normalisation here.
std::optional<ImageModelInput> image_model_input(const models::ModelConfig& c);

// The same for a run that must caption (`attn caption -m RUN`, the Python
// Captioner): a text model throws std::invalid_argument naming `run` and its type.
ImageModelInput image_input_of(const models::ModelConfig& c, const std::string& run);

// pixels [B, 3, H, W] (B = paths.size(), H x W = in's size): each file read,
// resized and normalised by image/input.h. Throws std::runtime_error naming
// the file that cannot be read, std::invalid_argument for no paths.
Tensor image_batch(const std::vector<std::string>& paths, const ImageModelInput& in);

// pixels [1, 3, H, W]: one decoded picture (an upload) resized and normalised
// as image_batch does a file's, so the same bytes caption the same either way.
Tensor picture_batch(const image::Image& picture, const ImageModelInput& in);

struct CaptionOptions {
  int beam = 1;                 // 1: greedy
  double length_penalty = 1.0;  // search.h's alpha
  int max_words = 40;           // pieces a caption may have: one that reaches it stops there, unfinished
  std::string attention_map;    // the map PieceCaption::attention holds ("": the model's default; search.h)
  nn::StepWeightType compute = nn::StepWeightType::F32;  // the search's products (search.h's compute)
};

struct PieceCaption {
  std::vector<int> tokens;       // [P] target ids, without BOS / EOS
  std::vector<float> attention;  // [P, Gh * Gw] row-major: piece p's weights over the grid (the EOS row dropped)
  double log_prob = 0;           // search.h's Hypothesis::log_prob
  bool finished = false;         // ended with EOS (else cut off at max_words)
};

// The best caption of each image of pixels [B, 3, H, W]: the model's encode on
// the pixels, then search() with lengths Gh * Gw. The model must be in eval
// mode. Throws std::invalid_argument on options out of range or when the
// model's attention rows are not Gh * Gw wide.
std::vector<PieceCaption> caption_pixels(const models::Seq2SeqModel& model, const Tensor& pixels,
                                         const ImageModelInput& in, const CaptionOptions& options = {});

struct WordCaption {
  std::vector<std::string> words;  // [T] the caption's words
  std::vector<float> attention;    // [T, Gh * Gw] row-major: word t's weights, the mean of its pieces' rows
};

// Pieces [P] (SentencePiece: "▁" starts a word, alignment.h's piece_words) and
// their attention [P, cells] -> words and per-word attention. Each word's row
// is the mean of its pieces' rows, so it is still a distribution. Throws
// std::invalid_argument when the attention is not [P, cells].
WordCaption merge_pieces(const std::vector<std::string>& pieces, const std::vector<float>& attention, int cells);

}  // namespace attn::decode
