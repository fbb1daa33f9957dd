// `attn caption`: image captioning.
//   attn caption -m RUN IMAGE... [--beam K] [--attention DIR] [--attention-map NAME]   caption image files
//   attn caption eval -m RUN --captions JSON ...                 scores (cmd_caption_eval.cpp)
//   attn caption data ... / attn caption sheet ...               data (cmd_caption_data.cpp)
// Captioning prints one line per image, "IMAGE<TAB>caption", in the order given;
// --attention DIR also draws each caption's per-word attention over its image
// (viz/image_attention.h's write_attention_files). The run's model must read
// images (decode/captioner.h's image_model_input); a translation run is refused
// naming its model type.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "attn/cli/commands.h"
#include "attn/cli/search_options.h"
#include "attn/cpu/threading.h"
#include "attn/decode/captioner.h"
#include "attn/decode/model_dir.h"
#include "attn/image/codec.h"
#include "attn/viz/image_attention.h"

namespace attn::cli {
namespace {

struct CaptionOpts {
  std::string model, weights, attention_dir, upsample = "bilinear", blend = "mask";
  std::vector<std::string> images;
  decode::CaptionOptions search;
  models::MapChoice map;  // --attention-map / --layer / --head: search.attention_map once the model is loaded
  int threads = 0, batch = 16;
  std::string compute = "fp32";  // --compute: search.compute once the model is loaded
};

viz::OverlayStyle overlay_style(const CaptionOpts& o) {
  viz::OverlayStyle s;
  s.upsample = o.upsample == "nearest" ? viz::Upsample::Nearest : viz::Upsample::Bilinear;
  s.blend = o.blend == "colormap" ? viz::Blend::Colormap : viz::Blend::Mask;
  return s;
}

// The figure of one caption: the image at its own size (the overlay is drawn on
// the picture the user gave, not on the model's resized input; the grid covers
// both the same way), the words and their attention [T, Gh * Gw], the caption as title.
viz::ImageAttention caption_overlay(const image::Image& picture, const decode::ImageModelInput& in,
                                    const decode::WordCaption& words, const std::string& caption) {
  viz::ImageAttention a;
  a.width = picture.width;
  a.height = picture.height;
  a.rgb = picture.rgb;
  a.grid_h = in.grid_h;
  a.grid_w = in.grid_w;
  a.weights = words.attention;
  a.words = words.words;
  a.title = caption;
  return a;
}

// Captions images [first, last) of o.images, printing each and drawing its overlays.
void caption_chunk(const CaptionOpts& o, const decode::TranslationModel& tm, const decode::ImageModelInput& in,
                   size_t first, size_t last) {
  const std::vector<std::string> paths(o.images.begin() + int64_t(first), o.images.begin() + int64_t(last));
  const std::vector<decode::PieceCaption> caps =
      decode::caption_pixels(*tm.model, decode::image_batch(paths, in), in, o.search);
  for (size_t k = 0; k < caps.size(); ++k) {
    const std::string caption = tm.tgt_vocab->decode(caps[k].tokens);
    std::cout << paths[k] << '\t' << caption << '\n';
    if (o.attention_dir.empty()) continue;
    std::vector<std::string> pieces;
    for (int id : caps[k].tokens) pieces.push_back(tm.tgt_vocab->piece(id));
    const decode::WordCaption words = decode::merge_pieces(pieces, caps[k].attention, in.grid_h * in.grid_w);
    if (words.words.empty()) continue;  // an empty caption: no word to draw
    const std::string name = std::to_string(first + k + 1) + "-" + std::filesystem::path(paths[k]).stem().string();
    try {
      const viz::ImageAttention overlay = caption_overlay(image::read_image(paths[k]), in, words, caption);
      viz::write_attention_files(o.attention_dir, name, overlay, overlay_style(o));
    } catch (const std::invalid_argument& e) {  // the figure code sees pixels, not files: name the image here
      throw std::invalid_argument(paths[k] + ": --attention: " + e.what());
    }
  }
}

void run_captioning(CaptionOpts o) {
  if (o.model.empty() || o.images.empty())
    throw std::invalid_argument("attn caption: give -m RUN and one or more IMAGE files, or a subcommand (eval, data, sheet)");
  set_num_threads(o.threads);
  const decode::TranslationModel tm = decode::load_model_dir(o.model, o.weights);  // image_input_of refuses text models
  const decode::ImageModelInput in = decode::image_input_of(tm.model->config(), o.model);
  o.search.attention_map = chosen_attention_map(*tm.model, o.map);  // an unknown name: before any image is read
  o.search.compute = compute_type(o.compute, *tm.model);  // a type the model cannot search in: refused now
  for (size_t first = 0; first < o.images.size(); first += size_t(o.batch))
    caption_chunk(o, tm, in, first, std::min(o.images.size(), first + size_t(o.batch)));
}

}  // namespace

CLI::App* add_caption_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("caption", "image captioning: caption images (-m RUN IMAGE...), score a run (eval), generate a data set "
                                            "(data), look at one (sheet)");
  cmd->require_subcommand(0, 1);
  auto o = std::make_shared<CaptionOpts>();
  cmd->add_option("-m,--model", o->model, "run directory of an image model written by `attn train`");
  cmd->add_option("--weights", o->weights, "weights file to use instead of RUN/model.safetensors");
  cmd->add_option("images", o->images, "image files to caption (PNG or JPEG)");
  add_beam_option(*cmd, o->search.beam, "beam size (1: greedy)", false);
  add_compute_option(*cmd, o->compute);
  cmd->add_option("--length-penalty", o->search.length_penalty, "alpha in score = log p / length^alpha")
      ->capture_default_str()->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--max-words", o->search.max_words, "pieces a caption may have")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("--attention", o->attention_dir,
                  "also write DIR/<n>-<name>.strip.png (the image, then one panel per word) and DIR/<n>-<name>.<t>.png "
                  "per word");
  add_attention_map_options(*cmd, o->map);
  cmd->add_option("--upsample", o->upsample, "how the grid's weights are enlarged: bilinear (smooth) or nearest "
                                             "(blocks: hard attention's cell)")
      ->capture_default_str()->check(CLI::IsMember({"bilinear", "nearest"}));
  cmd->add_option("--blend", o->blend, "mask (darken where the word does not look) or colormap (viridis)")
      ->capture_default_str()->check(CLI::IsMember({"mask", "colormap"}));
  cmd->add_option("--batch", o->batch, "images per search")->capture_default_str()->check(CLI::Range(1, 1024));
  add_threads_option(*cmd, o->threads);
  cmd->callback([cmd, o] {
    if (cmd->get_subcommands().empty()) run_captioning(*o);  // `caption data` / `caption sheet` ran their own
  });
  return cmd;
}

}  // namespace attn::cli
