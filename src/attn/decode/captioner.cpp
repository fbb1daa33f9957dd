#include "attn/decode/captioner.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/decode/alignment.h"
#include "attn/decode/search.h"
#include "attn/image/image.h"
#include "attn/image/input.h"
#include "attn/models/kinds.h"

namespace attn::decode {

std::optional<ImageModelInput> image_model_input(const models::ModelConfig& c) {
  if (!models::reads_images(c)) return std::nullopt;  // a text model
  const models::ImageShape shape = models::image_shape(c);
  ImageModelInput in;
  in.width = in.height = int(shape.size);
  in.grid_h = int(shape.grid_h), in.grid_w = int(shape.grid_w);
  // what the captioning task trains with (train/caption_task.h, caption_normalization)
  in.normalization = image::imagenet_normalization();
  return in;
}

ImageModelInput image_input_of(const models::ModelConfig& c, const std::string& run) {
  std::optional<ImageModelInput> in = image_model_input(c);
  if (!in)
    throw std::invalid_argument(run + ": its model is " + c.type +
                                ", a translation model that reads text; `attn caption -m` needs a run of an image "
                                "model (show_attend_tell)");
  return *in;
}

Tensor image_batch(const std::vector<std::string>& paths, const ImageModelInput& in) {
  if (paths.empty()) throw std::invalid_argument("image batch: no image files");
  const int64_t B = int64_t(paths.size()), per_image = 3 * int64_t(in.height) * int64_t(in.width);
  Tensor pixels = Tensor::empty({B, 3, int64_t(in.height), int64_t(in.width)});
  for (int64_t b = 0; b < B; ++b) {
    const Tensor one = image::load_input(paths[size_t(b)], in.width, in.height, in.normalization);  // [3, H, W]
    std::memcpy(pixels.data() + b * per_image, one.data(), size_t(per_image) * sizeof(float));
  }
  return pixels;
}

Tensor picture_batch(const image::Image& picture, const ImageModelInput& in) {
  const Tensor one = image::picture_input(picture, in.width, in.height, in.normalization);  // [3, H, W]
  return reshape(one, {1, 3, int64_t(in.height), int64_t(in.width)});
}

std::vector<PieceCaption> caption_pixels(const models::Seq2SeqModel& model, const Tensor& pixels,
                                         const ImageModelInput& in, const CaptionOptions& options) {
  if (!pixels.defined() || pixels.dim() != 4 || pixels.size(1) != 3 || pixels.size(2) != in.height ||
      pixels.size(3) != in.width)
    throw std::invalid_argument("caption: expects pixels [B, 3, " + std::to_string(in.height) + ", " +
                                std::to_string(in.width) + "]");
  if (options.max_words < 1) throw std::invalid_argument("caption: max_words must be at least 1");
  const int64_t cells = int64_t(in.grid_h) * int64_t(in.grid_w);
  SearchOptions so;
  so.beam = options.beam;
  so.length_penalty = options.length_penalty;
  so.max_len_ratio = 0;  // the length limit is max_words, whatever the grid's size
  so.max_len_offset = options.max_words;  // search.h stops a hypothesis at this many tokens
  so.attention_map = options.attention_map;
  so.compute = options.compute;
  NoGradGuard no_grad;
  const std::vector<int64_t> lengths(size_t(pixels.size(0)), cells);
  const std::vector<SearchResult> results = search(model, pixels, lengths, so);
  std::vector<PieceCaption> out;
  for (const SearchResult& r : results) {
    const Hypothesis& h = r.hypotheses.front();
    const size_t rows = h.tokens.size() + (h.finished ? 1 : 0);
    if (r.src_len != cells || h.attention.size() != rows * size_t(cells))
      throw std::invalid_argument("caption: the model's attention rows hold " +
                                  std::to_string(rows ? h.attention.size() / rows : 0) + " weights, its grid " +
                                  std::to_string(in.grid_h) + "x" + std::to_string(in.grid_w) + " has " +
                                  std::to_string(cells) + " cells");
    PieceCaption c;
    c.tokens = h.tokens;
    c.attention.assign(h.attention.begin(), h.attention.begin() + int64_t(h.tokens.size()) * cells);  // EOS row dropped
    c.log_prob = h.log_prob;
    c.finished = h.finished;
    out.push_back(std::move(c));
  }
  return out;
}

WordCaption merge_pieces(const std::vector<std::string>& pieces, const std::vector<float>& attention, int cells) {
  if (cells < 1 || attention.size() != pieces.size() * size_t(cells))
    throw std::invalid_argument("caption words: attention holds " + std::to_string(attention.size()) +
                                " weights, expected [pieces = " + std::to_string(pieces.size()) +
                                ", cells = " + std::to_string(cells) + "]");
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
  const std::vector<int> word_of = piece_words(pieces);
  const size_t words = word_of.empty() ? 0 : size_t(word_of.back()) + 1;
  std::vector<std::string> text(words);
  std::vector<float> sum(words * size_t(cells), 0.0f);
  std::vector<int> count(words, 0);
  for (size_t p = 0; p < pieces.size(); ++p) {
    const size_t w = size_t(word_of[p]);
    text[w] += pieces[p].compare(0, kSpace.size(), kSpace) == 0 ? pieces[p].substr(kSpace.size()) : pieces[p];
    for (size_t g = 0; g < size_t(cells); ++g) sum[w * size_t(cells) + g] += attention[p * size_t(cells) + g];
    ++count[w];
  }
  WordCaption out;
  for (size_t w = 0; w < words; ++w) {
    if (text[w].empty()) continue;  // a lone "▁" piece: no word to show
    out.words.push_back(text[w]);
    for (size_t g = 0; g < size_t(cells); ++g) out.attention.push_back(sum[w * size_t(cells) + g] / float(count[w]));
  }
  return out;
}

}  // namespace attn::decode
