// The configuration of a translation model: one struct for both model types,
// read from the `model:` section of a training config (YAML, via JSON) and
// stored as JSON inside every model file, so a model directory alone says how
// to rebuild its network.
//
//   type: rnnsearch | luong | show_attend_tell
//   src_vocab, tgt_vocab            set by the trainer from the vocabularies
//   embed                           E, word embedding size (source and target)
//   encoder_hidden, encoder_layers  He per direction, stacked layers
//   bidirectional                   encoder reads both directions (rnnsearch: required)
//   decoder_hidden, decoder_layers  Hd, stacked layers (rnnsearch: 1)
//   cell: gru | lstm                luong's recurrent cell (rnnsearch: gru)
//   attention                       A, size of the additive / concat score MLP
//   score: dot | general | concat   luong's score function
//   window: global | local-m | local-p, window_half_width   luong's global or local attention
//   readout                         rnnsearch's deep-output size R before the vocabulary projection
//   decoder_init: mean | backward | zero   rnnsearch's initial decoder state
//   dropout                         on embeddings, between layers and before the output
//   tied_embeddings: none | decoder | all   share the output projection with the target
//                                   embedding (decoder), and also the source embedding (all, joint vocab)
//   pad_id, bos_id, eos_id, unk_id  the vocabularies' special ids (set by the trainer from them)
// show_attend_tell (image captioning; src_vocab unused and 0) reads embed, decoder_hidden,
// attention (A), dropout, tgt_vocab and:
//   image_size                      H = W of the input images (pixels)
//   grid                            G: the CNN's output grid is G x G (image_size / grid a power of 2)
//   cnn_channels                    the first CNN block's channels (a multiple of 8); each later
//                                   block doubles it, the last block's is the annotation size D
//   cnn_context_blocks              CNN blocks after those, at the grid's resolution (no pooling):
//                                   each widens what a cell sees by two cells
//   image_attention: soft | hard | none   softmax-weighted sum of the cells / one cell sampled
//                                   (training) or the argmax cell (inference) / the mean of the
//                                   cells as the only context (the no-attention baseline)
//   attention_reg                   lambda of the doubly stochastic regulariser sum_i (1 - sum_t alpha_ti)^2
//   reinforce_weight                hard: lambda_r, the weight of the REINFORCE term (Xu et al. eq. 12)
//   entropy_bonus                   hard: weight of the attention entropy in the REINFORCE loss
//   baseline_decay                  hard: the moving-average baseline b <- decay b + (1 - decay) r
//   hard_expected_prob              hard, training: the probability, per caption, that every step
//                                   takes the expected context (soft's) instead of a drawn cell
//                                   (Xu et al. sec. 4.1 use 0.5 to reduce the estimator's variance)
#pragma once
#include <cstdint>
#include <string>

#include "attn/data/special_ids.h"

namespace attn::models {

enum class ModelType { RnnSearch, Luong, ShowAttendTell };
enum class CellType { Gru, Lstm };
enum class LuongScore { Dot, General, Concat };
enum class LuongWindow { Global, LocalM, LocalP };
enum class DecoderInit { Mean, Backward, Zero };
enum class TiedEmbeddings { None, Decoder, All };
enum class ImageAttention { Soft, Hard, None };

struct ModelConfig {
  ModelType type = ModelType::RnnSearch;  // which network
  int64_t src_vocab = 0;                  // source vocabulary size (> 4; set from the vocabulary)
  int64_t tgt_vocab = 0;                  // target vocabulary size (> 4)
  int64_t embed = 256;                    // E: embedding size
  int64_t encoder_hidden = 256;           // He: encoder GRU/LSTM size per direction
  int64_t encoder_layers = 1;             // stacked encoder layers
  bool bidirectional = true;              // bidirectional encoder (annotations are 2 He wide)
  int64_t decoder_hidden = 512;           // Hd: decoder state size
  int64_t decoder_layers = 1;             // stacked decoder layers (luong only; rnnsearch has 1)
  CellType cell = CellType::Gru;          // recurrent cell (luong); rnnsearch is GRU
  int64_t attention = 256;                // A: additive (rnnsearch) / concat (luong) score size
  LuongScore score = LuongScore::General; // luong: score function
  LuongWindow window = LuongWindow::Global;  // luong: global or local attention
  int64_t window_half_width = 10;         // luong local: D, the window is [p - D, p + D]
  int64_t readout = 256;                  // R: rnnsearch deep-output size
  DecoderInit decoder_init = DecoderInit::Mean;  // rnnsearch: s0 = tanh(W mean_j h_j) / tanh(W h_1 backward) / 0
  double dropout = 0.2;                   // dropout probability in training
  TiedEmbeddings tied_embeddings = TiedEmbeddings::None;  // weight sharing, see the file comment
  data::SpecialIds specials;              // padding (embedding zero row, ignored by the loss), BOS, EOS, UNK
  // show_attend_tell only (see the file comment)
  int64_t image_size = 64;                // H = W
  int64_t grid = 8;                       // G: annotations on a G x G grid
  int64_t cnn_channels = 32;              // first CNN block's channels; D = cnn_channels * 2^(blocks - 1)
  int64_t cnn_context_blocks = 0;         // unpooled CNN blocks at the grid's resolution after the pooling ones
  ImageAttention image_attention = ImageAttention::Soft;
  double attention_reg = 1.0;             // lambda (Xu et al. eq. 14)
  double reinforce_weight = 1.0;          // hard: lambda_r (Xu et al. eq. 12)
  double entropy_bonus = 0.01;            // hard: lambda_e (Xu et al. eq. 12)
  double baseline_decay = 0.9;            // hard: b_k = decay b_{k-1} + (1 - decay) r_k (Xu et al. sec. 4.1)
  double hard_expected_prob = 0.5;        // hard: P(a caption takes the expected context) (Xu et al. sec. 4.1)
};

// The CNN blocks of a show_attend_tell config: log2(image_size / grid).
int64_t cnn_blocks(const ModelConfig& c);
// Whether the model reads images (show_attend_tell) rather than source ids.
inline bool reads_images(const ModelConfig& c) { return c.type == ModelType::ShowAttendTell; }

// Throws std::invalid_argument naming the field when a value is out of range
// or a combination is not supported (e.g. tied embeddings with readout != embed).
// Also bounds every size (kMaxVocab, kMaxWidth, kMaxLayers) so that a lying
// config is refused before anything is allocated from it.
void validate(const ModelConfig& c);
constexpr int64_t kMaxVocab = int64_t(1) << 22;
constexpr int64_t kMaxWidth = int64_t(1) << 15;
constexpr int64_t kMaxLayers = 64;

// A lower bound on the parameter count a validated config implies (the
// embeddings, the first encoder layer's input weights, the decoder's
// recurrent weights), computed without allocating: a loader compares it with
// the file's element count and refuses a config claiming more than the file holds.
int64_t min_parameter_count(const ModelConfig& c);

// JSON object text <-> config. from_json checks types and rejects unknown keys
// naming them ("<path>.<key>: unknown key"); it does not validate() (the
// trainer fills in the vocabulary sizes first). `path` prefixes error messages.
std::string to_json(const ModelConfig& c);
ModelConfig model_config_from_json(const std::string& json_text, const std::string& path = "model");

const char* name(ModelType t);
const char* name(CellType t);
const char* name(LuongScore s);
const char* name(LuongWindow w);
const char* name(ImageAttention a);

}  // namespace attn::models
