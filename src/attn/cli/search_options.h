// The options every decoding command shares, with one set of bounds: a
// command that decodes takes its beam and threads through these, so `attn
// translate -b 100000` or `--threads -3` stops at parse time naming the flag,
// as the server's request limits do (serve/options.h).
#pragma once
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "attn/decode/compute_type.h"
#include "attn/decode/model_dir.h"
#include "attn/decode/shortlist.h"
#include "attn/models/attention_maps.h"
#include "attn/models/seq2seq.h"

namespace attn::cli {

// The largest beam a command decodes with. A search holds batch x beam rows of
// decoder state and logits ([rows, vocab] floats each step): at 64 and the
// default batch of 64, 4,096 rows, a few hundred MB at vocab 8,000.
constexpr int kMaxBeam = 64;
constexpr int kMaxThreads = 4096;  // the training config's bound for train.threads

// -b,--beam (or --beam alone when `short_flag` is false) in [1, kMaxBeam].
CLI::Option* add_beam_option(CLI::App& cmd, int& beam, const std::string& help, bool short_flag = true);
// --threads in [0, kMaxThreads] (0: all cores).
CLI::Option* add_threads_option(CLI::App& cmd, int& threads);
// --compute fp32|int8|bf16|auto: the element type of the search's products
// (nn/step_weight_types.h; default fp32).
CLI::Option* add_compute_option(CLI::App& cmd, std::string& compute);
// The type a --compute value names for a model: decode/compute_type.h.
using decode::compute_type;
// --shortlist K, --shortlist-frequent N, --shortlist-file FILE: a vocabulary
// shortlist (decode/shortlist.h) of each source piece's K best translations
// and the N most frequent target pieces, from FILE (default
// RUN/shortlist.tsv, written by `attn shortlist RUN`).
struct ShortlistChoice {
  int64_t per_source = 0;  // K; 0: no shortlist
  int64_t frequent = 100;  // N
  std::string file;        // "" : RUN/shortlist.tsv
};
void add_shortlist_options(CLI::App& cmd, ShortlistChoice& choice);
// The shortlist `choice` asks for, or nullptr for K = 0. Throws
// std::runtime_error naming the file (missing: saying how to make it) or its
// bad line; std::invalid_argument for a model without source text (the captioner).
std::shared_ptr<const decode::Shortlist> load_shortlist(const ShortlistChoice& choice, const std::string& run,
                                                        const decode::TranslationModel& model);

// The bytes of an input line that are read (the rest of a longer line is never
// held): 256 per allowed source piece, at least 64 KiB; 1 MiB without a piece
// limit. A piece spans a few bytes of text (SentencePiece's longest are 16
// characters), so a line cut here still has more than N pieces unless it is
// mostly whitespace or unknown characters; and SentencePiece holds ~250 bytes
// per byte of a line it encodes: a 10 MB line once took 2.5 GB.
size_t line_byte_limit(int64_t max_src_pieces);

// --attention-map NAME, --layer L and --head H|mean: the attention map a
// command shows (its alignments, heatmaps, explanation), by name (one of the
// model's, models::Seq2SeqModel::attention_maps()) or, for a model whose maps
// have layers and heads (the Transformer), by layer and head
// (models/attention_maps.h: choose_map); nothing given: the model's own.
// `prefix` ("" or "self-") names the options (--self-attention-map,
// --self-layer, --self-head: attn explain's encoder self-attention map).
void add_attention_map_options(CLI::App& cmd, models::MapChoice& choice, const std::string& prefix = "");

// The map `choice` names among the model's attention_maps(); throws
// std::invalid_argument (exit 1, before any input is read) for an unknown
// name or a layer / head outside the model's ranges.
std::string chosen_attention_map(const models::Seq2SeqModel& model, const models::MapChoice& choice);

// --max-src-pieces in [0, 1,000,000] (0: no limit where `zero_is_no_limit`, else [1, ...]).
CLI::Option* add_max_src_pieces_option(CLI::App& cmd, int64_t& pieces, const std::string& help, bool zero_is_no_limit);

}  // namespace attn::cli
