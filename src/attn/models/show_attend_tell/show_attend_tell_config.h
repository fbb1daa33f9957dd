// show_attend_tell's config section (model.type: show_attend_tell, image
// captioning; src_vocab 0, no source embedding):
//   decoder_hidden                  Hd, the LSTM decoder's size (one layer)
//   attention                       A, the additive score's size
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
// Files written before the sections also carry `cell` (must be lstm) and
// `decoder_layers` (must be 1); the reader checks and drops them.
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/config.h"

namespace attn::models {

enum class ImageAttention { Soft, Hard, None };

struct ShowAttendTellConfig : KindConfig {
  int64_t decoder_hidden = 512;           // Hd: the LSTM decoder's size
  int64_t attention = 256;                // A: the additive score's size
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
  std::unique_ptr<KindConfig> clone() const override { return std::make_unique<ShowAttendTellConfig>(*this); }
};

// The CNN blocks of a show_attend_tell config: log2(image_size / grid).
int64_t cnn_blocks(const ShowAttendTellConfig& s);

const char* name(ImageAttention a);

}  // namespace attn::models
