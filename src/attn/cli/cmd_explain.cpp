// `attn explain -m RUN`: how a trained model translates a sentence, one decoder
// step at a time (decode/explain.h): per line of input (stdin or -i), the
// query, each source token's alignment score and weight, the context, the
// top-k next tokens and the chosen one; --format json prints one object per
// line (docs/explain-and-figures.md lists the fields). `attn explain --example NAME`
// prints a seed tutorial's worked example (decode/explain_examples.h).
// A captioning run (an image model) is explained over its grid: the inputs are
// image files (arguments, or one path per line of -i / stdin), each step shows
// the scores and weights as the G x G grid the seed's Figures 10-14 draw.
// A Transformer's maps are chosen by layer and head too (--layer, --head), and
// its encoder's self-attention (source x source) is in the JSON's
// "self_attention" and drawn by --self-heatmap (--self-layer, --self-head).
#include <iostream>

#include "attn/cli/commands.h"
#include "attn/cli/heatmaps.h"
#include "attn/cli/search_options.h"
#include "attn/cpu/threading.h"
#include "attn/data/line_reader.h"
#include "attn/decode/captioner.h"
#include "attn/decode/explain.h"
#include "attn/decode/explain_examples.h"
#include "attn/decode/model_dir.h"

namespace attn::cli {

void add_explain_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("explain", "show the attention of a trained model step by step (or a tutorial's example)");
  struct Opts {
    std::string model, weights, input, format = "text", example, heatmap, self_heatmap, heatmap_colors = "grey";
    std::vector<std::string> images;
    decode::ExplainOptions explain;
    models::MapChoice map, self_map;  // --attention-map / --layer / --head, and the --self- ones
    int threads = 0;
    std::string compute = "fp32";
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("-m,--model", o->model, "run directory written by `attn train`");
  cmd->add_option("--weights", o->weights, "weights file instead of DIR/model.safetensors");
  cmd->add_option("-i,--input", o->input, "input file, one sentence (image model: image path) per line (default: stdin)");
  cmd->add_option("images", o->images, "image files to explain (a captioning run; instead of -i / stdin)");
  add_beam_option(*cmd, o->explain.beam, "beam size (1: greedy); the best hypothesis is explained");
  add_max_src_pieces_option(*cmd, o->explain.max_src_pieces,
                            "a sentence of more SentencePiece pieces is refused, naming its line (as the server does)",
                            false);
  cmd->add_option("--top-k", o->explain.top_k, "next-token candidates shown per step")->capture_default_str();
  cmd->add_option("--format", o->format, "text (tables) or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_flag("--words", o->explain.words, "merge SentencePiece pieces into words");
  cmd->add_option("--max-len-ratio", o->explain.max_len_ratio, "at most ratio * source length + 5 target pieces")
      ->capture_default_str();
  cmd->add_option("--heatmap", o->heatmap,
                  "also draw each sentence's weights to FILE (.png .svg .pdf .html; several lines: FILE-0001.png, ...)");
  cmd->add_option("--heatmap-colors", o->heatmap_colors, "colour map of --heatmap (grey: 0 black, 1 white)")
      ->check(CLI::IsMember({"grey", "viridis"}))
      ->capture_default_str();
  add_attention_map_options(*cmd, o->map);
  cmd->add_option("--self-heatmap", o->self_heatmap,
                  "also draw each sentence's encoder self-attention (source x source, a Transformer's) to FILE");
  add_attention_map_options(*cmd, o->self_map, "self-");
  cmd->add_option("--example", o->example, "print a seed tutorial's worked example: general-attention, translation-step");
  add_threads_option(*cmd, o->threads);
  add_compute_option(*cmd, o->compute);
  cmd->callback([o] {
    if (!o->example.empty()) {
      std::cout << decode::example_text(o->example);
      return;
    }
    if (o->model.empty()) throw std::invalid_argument("explain: --model RUN is required (or --example NAME)");
    set_num_threads(o->threads);
    viz::HeatmapStyle heatmap_style;
    heatmap_style.colors = viz::parse_color_map(o->heatmap_colors, "--heatmap-colors");
    decode::TranslationModel tm = decode::load_model_dir(o->model, o->weights);
    // an unknown map, layer or head: before any input is read
    o->explain.attention_map = chosen_attention_map(*tm.model, o->map);
    o->explain.compute = compute_type(o->compute, *tm.model);
    const std::vector<std::string> self_maps = tm.model->encoder_attention_maps();
    const bool self_asked = !o->self_heatmap.empty() || o->self_map.layer != 0 || !o->self_map.head.empty() ||
                            !o->self_map.name.empty();
    if (self_asked && self_maps.empty())
      throw std::invalid_argument("explain: --self-heatmap, --self-attention-map, --self-layer, --self-head: the model (" +
                                  tm.model->config().type + ") has no encoder self-attention maps");
    if (!self_maps.empty())
      o->explain.self_attention_map = models::choose_map(self_maps, o->self_map, "encoder attention map", "--self-");
    const bool image_model = decode::image_model_input(tm.model->config()).has_value();
    if (!image_model && !o->images.empty())
      throw std::invalid_argument("explain: " + o->model + " is a translation model: give sentences on stdin or -i, "
                                  "not image files");
    if (image_model && !o->heatmap.empty())
      throw std::invalid_argument("explain: --heatmap draws a text model's source x target weights; for an image "
                                  "model, `attn caption -m RUN IMAGE --attention DIR` draws them over the image");
    const std::string source = !o->images.empty() ? "arguments" : o->input.empty() ? "stdin" : o->input;
    const data::LineLimit limit{line_byte_limit(o->explain.max_src_pieces)};  // a longer line is refused
    std::vector<std::string> lines = !o->images.empty() ? o->images
                                     : o->input.empty() ? data::read_lines(stdin, "stdin", limit)
                                                        : data::read_lines(o->input, limit);
    for (size_t i = 0; i < lines.size(); ++i) {
      nlohmann::json e;
      try {
        e = image_model ? decode::explain_image(tm, lines[i], o->explain) : decode::explain_text(tm, lines[i], o->explain);
      } catch (const std::invalid_argument& err) {
        throw std::invalid_argument(source + ":" + std::to_string(i + 1) + ": " + err.what());
      }
      viz::Heatmap h;
      if (!o->heatmap.empty() &&
          explanation_heatmap(e, models::map_title(tm.model->attention_maps(), o->explain.attention_map), h)) {
        const std::string path = numbered_path(o->heatmap, i + 1, lines.size());
        viz::write_heatmap(path, h, heatmap_style);
        std::cerr << "explain: heatmap of line " << i + 1 << " written to " << path << "\n";
      }
      if (!o->self_heatmap.empty() &&
          self_attention_heatmap(e, models::map_title(self_maps, o->explain.self_attention_map), h)) {
        const std::string path = numbered_path(o->self_heatmap, i + 1, lines.size());
        viz::write_heatmap(path, h, heatmap_style);
        std::cerr << "explain: self-attention heatmap of line " << i + 1 << " written to " << path << "\n";
      }
      if (o->format == "json")
        std::cout << e.dump() << "\n";
      else
        std::cout << decode::explanation_table(e);
      std::cout.flush();
    }
  });
}

}  // namespace attn::cli
