// `attn translate --model DIR`: raw text in (stdin or -i), translations out
// (stdout or -o), greedy or beam search, n-best lists, alignments.
//
// Output per input line:
//   default          the best translation
//   --nbest N        N lines "i ||| translation ||| score" (Moses n-best format, i 0-based)
//   --alignments hard  "translation ||| 0-0 1-2 ..." (source word - target word, as Marian),
//                      or the pairs alone in --alignments-out FILE (one line per translation)
//   --alignments soft  one JSON object {"id" (n-best only), "translation", "score", "src", "tgt",
//                      "weights"} per translation
//                      (rows: target pieces and </s>, columns: source pieces), or the
//                      matrix alone in --alignments-out FILE
//   --long-lines truncate|skip|error, --max-src-pieces N (default truncate, 250): a line of more
//                      source pieces is translated from its first N pieces, or gives an empty
//                      output line, with a warning naming the line on stderr and a count at the
//                      end; or stops the command (exit 1) naming the line before any decoding.
//                      A line of more than line_byte_limit(N) bytes is over-long whatever its
//                      pieces: its bytes past the limit are never held (truncate: translated
//                      from the pieces of its first bytes)
//   --attention-stats FILE  also one JSON line in FILE: the best hypotheses' attention
//                      entropy and copy alignment (decode/attention_stats.h)
//   --attention-map NAME  the map that --alignments, --attention-stats and --heatmaps show (default:
//                      the model's own; an unknown name stops the command, exit 1, listing the maps);
//                      --layer L / --head H|mean name it by position (a Transformer's maps)
//   --heatmaps DIR     also DIR/0001.png, DIR/0002.png, ... (numbered by input line, 1-based;
//                      none for an empty line): the best hypothesis's attention drawn by
//                      viz/heatmap.h, titled by the map, --heatmap-format png|svg|pdf|html, --heatmap-colors grey|viridis
// An empty input line gives an empty output line.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "attn/cli/checked_output.h"
#include "attn/cli/commands.h"
#include "attn/cli/heatmaps.h"
#include "attn/cli/search_options.h"
#include "attn/cpu/threading.h"
#include "attn/data/line_reader.h"
#include "attn/decode/alignment.h"
#include "attn/decode/attention_stats.h"
#include "attn/decode/model_dir.h"
#include "attn/decode/translator.h"
#include <filesystem>

namespace attn::cli {

namespace {

struct Opts {
  std::string model, weights, input, output, alignments, alignments_out;
  std::string heatmaps, heatmap_format = "png", heatmap_colors = "grey", attention_stats;
  models::MapChoice map;  // --attention-map / --layer / --head
  int beam = 5, nbest = 1, threads = 0;
  std::string compute = "fp32";  // --compute
  ShortlistChoice shortlist;     // --shortlist ...
  double length_penalty = 1.0, max_len_ratio = 2.0;
  std::string beam_stop = "complete";
  int64_t batch = 64, chunk = 2000, max_src_pieces = 250;
  std::string long_lines = "truncate";
};

decode::LongLines long_lines_rule(const std::string& name) {
  if (name == "skip") return decode::LongLines::Skip;
  if (name == "error") return decode::LongLines::Error;
  return decode::LongLines::Truncate;
}

// Lines cut at line_byte_limit by the reader, under the over-long line rule:
// error stops before any decoding, skip empties them (the decoder then gives an
// empty output line), truncate keeps the bytes read. Each is reported on stderr.
void apply_rule_to_cut_lines(const Opts& o, const std::string& input, const std::vector<size_t>& cut,
                             std::vector<std::string>& lines) {
  const size_t limit = line_byte_limit(o.max_src_pieces);
  for (size_t i : cut) {
    const std::string where = input + ":" + std::to_string(i + 1) + ": line over " + std::to_string(limit) + " bytes";
    if (o.long_lines == "error")
      throw std::invalid_argument(where + " (over-long at --max-src-pieces " + std::to_string(o.max_src_pieces) +
                                  ", --long-lines error)");
    if (o.long_lines == "skip") lines[i].clear();
    std::cerr << "attn translate: " << where
              << (o.long_lines == "skip" ? ": skipped (an empty output line)\n"
                                         : ": translated from its first " + std::to_string(limit) + " bytes\n");
  }
}

// The over-long line rule's warning for input line `number` (1-based), on stderr.
void warn_long_line(const Opts& o, const std::string& input, size_t number, int64_t pieces) {
  std::cerr << "attn translate: " << input << ":" << number << ": " << pieces << " source pieces, over --max-src-pieces "
            << o.max_src_pieces
            << (o.long_lines == "skip" ? ": skipped (an empty output line)\n"
                                       : ": translated from its first " + std::to_string(o.max_src_pieces) + "\n");
}

// The output line(s) of translation `t` of input line `id` (0-based): its
// n-best, with alignments inline or to align_file.
void write_translation(const Opts& o, const decode::Translation& t, size_t id, std::ostream& out,
                       std::ofstream& align_file, bool inline_align) {
  const size_t shown = o.nbest > 1 ? size_t(o.nbest) : 1;
  for (size_t k = 0; k < shown; ++k) {
    const decode::TranslatedHypothesis* h = k < t.hypotheses.size() ? &t.hypotheses[k] : nullptr;
    if (!h && k > 0) break;  // empty line: one (empty) entry
    const std::string text = h ? h->text : "";
    std::string align;
    if (h && o.alignments == "hard")
      align = decode::format_alignment(
          decode::hard_alignment(h->attention, int64_t(t.src_pieces.size()), t.src_pieces, h->pieces));
    std::string soft;
    if (o.alignments == "soft") {
      soft = h ? decode::soft_alignment_json(h->attention, int64_t(t.src_pieces.size()), t.src_pieces, h->pieces,
                                             h->finished)
               : std::string(R"({"src":[],"tgt":[],"weights":[]})");
    }
    std::string line;
    if (o.nbest > 1) {
      char score[32];
      std::snprintf(score, sizeof score, "%.6f", h ? h->score : 0.0);
      line = std::to_string(id) + " ||| " + text + " ||| " + score;
    } else {
      line = text;
    }
    if (inline_align && o.alignments == "hard" && h) line += " ||| " + align;
    if (inline_align && o.alignments == "soft" && h) {
      nlohmann::ordered_json j = nlohmann::ordered_json::parse(soft);
      nlohmann::ordered_json w;
      if (o.nbest > 1) w["id"] = id;
      w["translation"] = text;
      w["score"] = h->score;
      for (auto it = j.begin(); it != j.end(); ++it) w[it.key()] = it.value();
      line = w.dump();
    }
    out << line << "\n";
    if (align_file.is_open()) align_file << (o.alignments == "hard" ? align : soft) << "\n";
  }
}

void add_options(CLI::App& cmd, Opts& o) {
  cmd.add_option("-m,--model", o.model, "run directory written by `attn train`")->required();
  cmd.add_option("--weights", o.weights, "weights file instead of DIR/model.safetensors (e.g. DIR/checkpoint/model.safetensors)");
  cmd.add_option("-i,--input", o.input, "input file (default: stdin)");
  cmd.add_option("-o,--output", o.output, "output file (default: stdout)");
  add_beam_option(cmd, o.beam, "beam size (1: greedy)");
  add_compute_option(cmd, o.compute);
  add_shortlist_options(cmd, o.shortlist);
  cmd.add_option("-n,--nbest", o.nbest, "hypotheses per sentence (<= beam)")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxBeam));
  cmd.add_option("--length-penalty", o.length_penalty, "score = log p / length^alpha")->capture_default_str();
  cmd.add_option("--beam-stop", o.beam_stop,
                 "a sentence's beam search ends when: complete (K hypotheses ended, fairseq) or top-ended (the best "
                 "extension is EOS, OpenNMT: sooner, shorter translations)")
      ->check(CLI::IsMember({"complete", "top-ended"}))
      ->capture_default_str();
  cmd.add_option("--max-len-ratio", o.max_len_ratio, "at most ratio * source length + 5 target pieces")
      ->capture_default_str();
  cmd.add_option("--alignments", o.alignments, "soft (JSON weight matrices) or hard (i-j word pairs)")
      ->check(CLI::IsMember({"soft", "hard"}));
  cmd.add_option("--alignments-out", o.alignments_out, "write alignments to this file instead of inline");
  cmd.add_option("--attention-stats", o.attention_stats,
                  "also write the best hypotheses' attention statistics (mean entropy, copy alignment) to this "
                  "file as one JSON line");
  add_attention_map_options(cmd, o.map);
  cmd.add_option("--heatmaps", o.heatmaps,
                  "also draw each sentence's attention (best hypothesis) to DIR/0001.png, ... (by input line)");
  cmd.add_option("--heatmap-format", o.heatmap_format, "format of the --heatmaps files")
      ->check(CLI::IsMember({"png", "svg", "pdf", "html"}))
      ->capture_default_str();
  cmd.add_option("--heatmap-colors", o.heatmap_colors, "colour map of the --heatmaps files (grey: 0 black, 1 white)")
      ->capture_default_str();
  add_max_src_pieces_option(cmd, o.max_src_pieces, "over-long line: more SentencePiece pieces than this (0: no limit)",
                            true);
  cmd.add_option("--long-lines", o.long_lines,
                  "an over-long line is: truncate (translated from its first pieces), skip (empty output line) "
                  "or error (exit 1); each is reported on stderr")
      ->check(CLI::IsMember({"truncate", "skip", "error"}))
      ->capture_default_str();
  cmd.add_option("--batch", o.batch, "sentences decoded together")->capture_default_str()->check(CLI::Range(1, 4096));
  add_threads_option(cmd, o.threads);
}

}  // namespace

void add_translate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("translate", "translate text with a trained model (stdin -> stdout, or files)");
  auto o = std::make_shared<Opts>();
  add_options(*cmd, *o);
  cmd->callback([o] {
    set_num_threads(o->threads);
    decode::TranslationModel tm = decode::load_translation_model(o->model, o->weights);
    const std::string map = chosen_attention_map(*tm.model, o->map);  // an unknown name: before any input is read
    const std::string input = o->input.empty() ? "stdin" : o->input;
    std::vector<size_t> cut;
    const data::LineLimit limit{line_byte_limit(o->max_src_pieces), &cut};
    std::vector<std::string> lines =
        o->input.empty() ? data::read_lines(stdin, input, limit) : data::read_lines(o->input, limit);
    apply_rule_to_cut_lines(*o, input, cut, lines);
    std::set<size_t> over_long(cut.begin(), cut.end());  // 0-based input lines the rule applied to
    if (!o->alignments_out.empty() && o->alignments.empty())
      throw std::invalid_argument("--alignments-out needs --alignments soft|hard");
    std::optional<OutputFile> out_file, align_out;
    if (!o->output.empty()) out_file.emplace(o->output);
    if (!o->alignments_out.empty()) align_out.emplace(o->alignments_out);
    std::ofstream no_file;
    std::ofstream& align_file = align_out ? align_out->stream() : no_file;
    std::ostream& out = out_file ? out_file->stream() : std::cout;
    decode::TranslateOptions to;
    to.search.beam = o->beam;
    to.search.nbest = o->nbest;
    to.search.length_penalty = o->length_penalty;
    to.search.stop = decode::beam_stop(o->beam_stop);
    to.search.max_len_ratio = o->max_len_ratio;
    to.search.alignments = !o->alignments.empty() || !o->heatmaps.empty() || !o->attention_stats.empty();
    to.search.attention_map = map;
    decode::AttentionStats stats;
    viz::HeatmapStyle heatmap_style;
    heatmap_style.colors = viz::parse_color_map(o->heatmap_colors, "--heatmap-colors");
    if (!o->heatmaps.empty()) std::filesystem::create_directories(o->heatmaps);
    to.batch_sentences = o->batch;
    to.max_src_tokens = o->max_src_pieces;
    to.long_lines = long_lines_rule(o->long_lines);
    to.search.compute = compute_type(o->compute, *tm.model);
    to.search.shortlist = load_shortlist(o->shortlist, o->model, tm);
    to.search.prepared = tm.model->prepare_decoder(to.batch_sentences * to.search.beam, to.search.compute);  // once for every chunk
    const bool inline_align = align_file.is_open() == false && !o->alignments.empty();
    for (size_t start = 0; start < lines.size(); start += size_t(o->chunk)) {
      const size_t end = std::min(lines.size(), start + size_t(o->chunk));
      std::vector<std::string> chunk(lines.begin() + long(start), lines.begin() + long(end));
      to.first_line = int64_t(start) + 1;
      std::vector<decode::Translation> tr;
      try {
        tr = decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, chunk, to);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(input + ": " + e.what() + (o->long_lines == "error" ? " (--long-lines error)" : ""));
      }
      for (size_t i = 0; i < tr.size(); ++i) {
        const decode::Translation& t = tr[i];
        if (t.over_long_pieces > 0) {
          warn_long_line(*o, input, start + i + 1, t.over_long_pieces);
          over_long.insert(start + i);
        }
        viz::Heatmap heatmap;
        heatmap.title = models::map_title(tm.model->attention_maps(), map);
        if (!o->heatmaps.empty() && translation_heatmap(t, heatmap))
          viz::write_heatmap(heatmap_path(o->heatmaps, start + i + 1, o->heatmap_format), heatmap, heatmap_style);
        write_translation(*o, t, start + i, out, align_file, inline_align);
        if (!o->attention_stats.empty() && !t.hypotheses.empty())
          stats.add(t.hypotheses[0].attention, t.src_pieces, t.hypotheses[0].pieces);
      }
      out.flush();
    }
    if (!over_long.empty())
      std::cerr << "attn translate: " << over_long.size() << " of " << lines.size() << " lines had more than "
                << o->max_src_pieces << " source pieces and were " << (o->long_lines == "skip" ? "skipped" : "truncated")
                << " (--long-lines, --max-src-pieces; a line over " << limit.max_bytes << " bytes counts as over-long)\n";
    if (out_file) out_file->commit();
    if (align_out) align_out->commit();
    if (!o->attention_stats.empty()) {
      OutputFile f(o->attention_stats);
      f.stream() << stats.json() << "\n";
      f.commit();
    }
  });
}

}  // namespace attn::cli
