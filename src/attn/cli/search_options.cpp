#include "attn/cli/search_options.h"

#include <algorithm>
#include <filesystem>

#include "attn/data/line_reader.h"

namespace attn::cli {

CLI::Option* add_beam_option(CLI::App& cmd, int& beam, const std::string& help, bool short_flag) {
  return cmd.add_option(short_flag ? "-b,--beam" : "--beam", beam, help)
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxBeam));
}

CLI::Option* add_threads_option(CLI::App& cmd, int& threads) {
  return cmd.add_option("--threads", threads, "threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxThreads));
}

CLI::Option* add_compute_option(CLI::App& cmd, std::string& compute) {
  return cmd
      .add_option("--compute", compute,
                  "element type of the search's products: fp32, int8 (weights per output row, activations per "
                  "row, int32 sums), bf16 (fp32 sums), auto (the fastest this CPU has: attn --version)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "int8", "bf16", "auto"}));
}

void add_shortlist_options(CLI::App& cmd, ShortlistChoice& choice) {
  cmd.add_option("--shortlist", choice.per_source,
                 "vocabulary shortlist: produce only the K best translations of the batch's source pieces and the "
                 "most frequent target pieces (0: the whole vocabulary)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 20));
  cmd.add_option("--shortlist-frequent", choice.frequent, "the shortlist's most frequent target pieces")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 20));
  cmd.add_option("--shortlist-file", choice.file, "the shortlist's lexicon (default: RUN/shortlist.tsv, from `attn shortlist RUN`)");
}

std::shared_ptr<const decode::Shortlist> load_shortlist(const ShortlistChoice& choice, const std::string& run,
                                                        const decode::TranslationModel& model) {
  if (choice.per_source == 0) return nullptr;
  if (!model.src_vocab)
    throw std::invalid_argument("--shortlist: the model (" + model.model->config().type + ") reads images, not source pieces");
  const std::string path = choice.file.empty() ? (std::filesystem::path(run) / "shortlist.tsv").string() : choice.file;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("--shortlist: " + path + " does not exist (`attn shortlist " + run + "` learns it)");
  const decode::Lexicon lex = decode::read_lexicon(path, *model.src_vocab, *model.tgt_vocab);
  return std::make_shared<decode::Shortlist>(lex, choice.per_source, choice.frequent, model.tgt_vocab->specials().eos);
}

void add_attention_map_options(CLI::App& cmd, models::MapChoice& choice, const std::string& prefix) {
  const std::string whose = prefix.empty() ? "the attention map to show" : "the encoder's self-attention map to show";
  cmd.add_option("--" + prefix + "attention-map", choice.name,
                 whose + ", by name (default: the model's own" +
                     (prefix.empty() ? "; a model with one map: attention)" : ", the last encoder layer's mean)"));
  cmd.add_option("--" + prefix + "layer", choice.layer,
                 whose + ", by layer (1-based; a model whose maps have layers and heads; with --" + prefix +
                     "head, default: the last layer)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd.add_option("--" + prefix + "head", choice.head,
                 whose + ": a head (1-based) or mean (the mean over the layer's heads; the default with --" +
                     prefix + "layer)");
}

std::string chosen_attention_map(const models::Seq2SeqModel& model, const models::MapChoice& choice) {
  return models::choose_map(model.attention_maps(), choice, "attention map");
}

size_t line_byte_limit(int64_t max_src_pieces) {
  if (max_src_pieces <= 0) return data::kMaxLineBytes;
  return std::max<size_t>(size_t(64) << 10, size_t(max_src_pieces) * 256);
}

CLI::Option* add_max_src_pieces_option(CLI::App& cmd, int64_t& pieces, const std::string& help,
                                       bool zero_is_no_limit) {
  return cmd.add_option("--max-src-pieces", pieces, help)
      ->capture_default_str()
      ->check(CLI::Range(int64_t(zero_is_no_limit ? 0 : 1), int64_t(1000000)));
}

}  // namespace attn::cli
