// Generated scenes (scenes/dataset.h) as a captioning run, for the captioner's
// trainer and end-to-end tests: the data set on disk and a small model's config.
#pragma once
#include <cstdint>
#include <string>

#include "attn/models/config.h"
#include "attn/models/kinds.h"
#include "attn/models/show_attend_tell/show_attend_tell_config.h"
#include "attn/scenes/dataset.h"

namespace attn::testing {

// dir/dataset_shapes.json and dir/images/: `count` scenes of 32x32 pixels
// (val and test 10% each) drawn with `seed`; returns the JSON's path.
inline std::string write_scenes(const std::string& dir, int64_t count, uint64_t seed, int size = 32) {
  scenes::DatasetOptions o;
  o.out_dir = dir;
  o.count = count;
  o.seed = seed;
  o.size = size;
  return scenes::write_dataset(o).json_path;
}

// A small show_attend_tell on 32x32 images (grid 4, 2 CNN blocks of 8 and 16 channels).
inline std::string toy_captioner(const std::string& attention) {
  return "  type: show_attend_tell\n"
         "  image_size: 32\n"
         "  grid: 4\n"
         "  cnn_channels: 8\n"
         "  embed: 16\n"
         "  decoder_hidden: 32\n"
         "  attention: 16\n"
         "  image_attention: " + attention + "\n";
}

// YAML of a captioning run over `json` into `out`: a vocabulary of 40 pieces,
// the model `model`, train options out_dir, max_tokens 400, lr 0.003 + train_extra.
inline std::string caption_config(const std::string& json, const std::string& out, const std::string& train_extra,
                                  const std::string& model) {
  return "data:\n"
         "  captions: " + json + "\n"
         "vocab:\n"
         "  size: 40\n"
         "model:\n" + model +
         "train:\n"
         "  out_dir: " + out + "\n"
         "  max_tokens: 400\n"
         "  lr: 0.003\n"
         "  label_smoothing: 0\n" + train_extra;
}

// A tiny captioner's config: 8x8 images, 2x2 grid (2 CNN blocks of 8 and 16
// channels), E 6, Hd 7, A 5, V 9, no dropout (the shapes of tests/oracle/show_attend_tell.py).
inline models::ModelConfig tiny_captioner_config(models::ImageAttention a) {
  models::ModelConfig c = models::model_config("show_attend_tell");
  c.src_vocab = 0;
  c.tgt_vocab = 9;
  models::ShowAttendTellConfig& s = c.section<models::ShowAttendTellConfig>();
  s.image_size = 8;
  s.grid = 2;
  s.cnn_channels = 8;
  c.embed = 6;
  s.decoder_hidden = 7;
  s.attention = 5;
  c.dropout = 0;
  s.image_attention = a;
  return c;
}

}  // namespace attn::testing
