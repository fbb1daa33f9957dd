// `attn caption eval -m RUN --captions JSON [--split test] [--beam K] [--attention-map NAME]`: a
// captioning run scored on one split of a Karpathy-style corpus (issue 15's
// acceptance figures). One JSON line per subset on stdout: all images, then
// (generated scenes) the images with 1, 2 and 3 objects:
//   {"subset":"all","images":300,"exact_match":..,"bleu":..,"localisation":..,
//    "named_words":..,"localised_words":..,"unmatched_words":..,"captions_not_localised":..}
// exact_match and localisation in percent; localisation only where the corpus
// has object boxes (eval/caption_metrics.h says how words are matched to
// objects and cells to boxes).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "attn/cli/commands.h"
#include "attn/cli/search_options.h"
#include "attn/cpu/threading.h"
#include "attn/data/caption_corpus.h"
#include "attn/decode/captioner.h"
#include "attn/decode/model_dir.h"
#include "attn/eval/caption_metrics.h"
#include "attn/scenes/scene.h"

namespace attn::cli {
namespace {

struct EvalOpts {
  std::string model, weights, captions, image_root, split = "test";
  decode::CaptionOptions search;
  models::MapChoice map;  // --attention-map / --layer / --head: search.attention_map once the model is loaded
  eval::LocalisationOptions localisation;
  int threads = 0, batch = 64;
  std::string compute = "fp32";  // --compute
};

// One scored image: its generated words and their attention [T, cells].
struct Scored {
  eval::CaptionSample sample;
  std::vector<float> attention;
};

std::vector<Scored> caption_split(const EvalOpts& o, const decode::TranslationModel& tm,
                                  const decode::ImageModelInput& in, const std::vector<data::CaptionImage>& images) {
  std::vector<Scored> out;
  for (size_t first = 0; first < images.size(); first += size_t(o.batch)) {
    const size_t last = std::min(images.size(), first + size_t(o.batch));
    std::vector<std::string> paths;
    for (size_t i = first; i < last; ++i) paths.push_back(images[i].path);
    const std::vector<decode::PieceCaption> caps =
        decode::caption_pixels(*tm.model, decode::image_batch(paths, in), in, o.search);
    for (size_t k = 0; k < caps.size(); ++k) {
      std::vector<std::string> pieces;
      for (int id : caps[k].tokens) pieces.push_back(tm.tgt_vocab->piece(id));
      const decode::WordCaption words = decode::merge_pieces(pieces, caps[k].attention, in.grid_h * in.grid_w);
      Scored s;
      s.sample.words = eval::caption_words(tm.tgt_vocab->decode(caps[k].tokens));
      // merge_pieces' words are the pieces joined; caption_words lower-cases and drops punctuation:
      // the attention rows follow merge_pieces' words, which must be the same words
      if (s.sample.words.size() == words.words.size()) s.attention = words.attention;
      for (const data::Caption& c : images[first + k].captions) s.sample.references.push_back(c.tokens);
      out.push_back(std::move(s));
    }
  }
  return out;
}

// The JSON line of the images `subset` (indices into images / scored).
nlohmann::json score(const std::string& name, const std::vector<size_t>& subset,
                     const std::vector<data::CaptionImage>& images, const std::vector<Scored>& scored,
                     const decode::ImageModelInput& in, const eval::LocalisationOptions& options) {
  std::vector<eval::CaptionSample> samples;
  eval::Localisation loc;
  const eval::ObjectLexicon lexicon{scenes::shape_names(), scenes::colour_names(), scenes::size_names()};
  bool boxes = false;
  int64_t without_attention = 0;  // captions whose words merge_pieces split otherwise (not localised)
  for (size_t i : subset) {
    samples.push_back(scored[i].sample);
    const data::CaptionImage& img = images[i];
    if (img.objects.empty() || img.width <= 0) continue;
    if (scored[i].attention.empty() && !scored[i].sample.words.empty()) ++without_attention;
    if (scored[i].attention.empty()) continue;
    boxes = true;
    const eval::GridGeometry grid{img.width, img.height, in.grid_h, in.grid_w};
    loc += eval::localise(scored[i].sample.words, scored[i].attention, img.objects, grid, lexicon, options);
  }
  nlohmann::json j{{"subset", name}, {"images", subset.size()}};
  j["exact_match"] = 100.0 * eval::exact_match_accuracy(samples);
  j["bleu"] = eval::caption_bleu(samples).score;
  if (boxes) {
    j["localisation"] = 100.0 * loc.rate();
    j["named_words"] = loc.named;
    j["localised_words"] = loc.localised;
    j["unmatched_words"] = loc.unmatched;
    j["captions_not_localised"] = without_attention;
  }
  return j;
}

void run_eval(EvalOpts o) {
  set_num_threads(o.threads);
  const decode::TranslationModel tm = decode::load_model_dir(o.model, o.weights);
  const std::optional<decode::ImageModelInput> in = decode::image_model_input(tm.model->config());
  if (!in) throw std::invalid_argument(o.model + ": not an image model; `attn caption eval` needs a captioning run");
  o.search.attention_map = chosen_attention_map(*tm.model, o.map);  // an unknown name: before any image is read
  o.search.compute = compute_type(o.compute, *tm.model);
  const std::string root = o.image_root.empty() ? std::filesystem::path(o.captions).parent_path().string() : o.image_root;
  const data::CaptionCorpus corpus = data::read_caption_corpus(o.captions, root.empty() ? "." : root);
  const std::vector<data::CaptionImage> images = data::select_splits(corpus, {o.split});
  if (images.empty()) throw std::invalid_argument(o.captions + ": no image in split " + o.split);
  const std::vector<Scored> scored = caption_split(o, tm, *in, images);
  std::vector<size_t> all(images.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::cout << score("all", all, images, scored, *in, o.localisation).dump() << '\n';
  for (size_t count = 1; count <= 3; ++count) {
    const std::vector<size_t> subset = eval::images_with_objects(images, count);
    if (!subset.empty())
      std::cout << score(std::to_string(count) + " objects", subset, images, scored, *in, o.localisation).dump() << '\n';
  }
  if (!std::cout.flush()) throw std::runtime_error("attn caption eval: cannot write to stdout");
}

}  // namespace

void add_caption_eval_command(CLI::App& caption) {
  auto* cmd = caption.add_subcommand("eval", "score a captioning run on a split of a Karpathy-style corpus: exact "
                                             "match, BLEU-4, attention localisation (JSON lines)");
  auto o = std::make_shared<EvalOpts>();
  cmd->add_option("-m,--model", o->model, "run directory of an image model written by `attn train`")->required();
  cmd->add_option("--weights", o->weights, "weights file to use instead of RUN/model.safetensors");
  cmd->add_option("--captions", o->captions, "Karpathy-style split file (dataset_*.json)")->required();
  cmd->add_option("--image-root", o->image_root, "folder the file's image paths are relative to (default: its folder)");
  cmd->add_option("--split", o->split, "split to score")->capture_default_str()
      ->check(CLI::IsMember(data::caption_split_names()));
  add_beam_option(*cmd, o->search.beam, "beam size (1: greedy)", false);
  add_compute_option(*cmd, o->compute);
  cmd->add_option("--max-words", o->search.max_words, "pieces a caption may have")
      ->capture_default_str()->check(CLI::Range(1, 1000));
  add_attention_map_options(*cmd, o->map);  // the map localisation reads
  cmd->add_flag("--shape-words-only", o->localisation.shape_words_only,
                "localisation over the shape words alone (else every size, colour and shape word of an object)");
  cmd->add_option("--min-overlap", o->localisation.min_overlap,
                  "share of the argmax cell (or of a smaller box) the object's box must cover")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--batch", o->batch, "images per search")->capture_default_str()->check(CLI::Range(1, 1024));
  add_threads_option(*cmd, o->threads);
  cmd->callback([o] { run_eval(*o); });
}

}  // namespace attn::cli
