// Batched greedy and beam search over any Seq2SeqModel (models/seq2seq.h).
//
// Legend: B sentences, K beam size, N decoder rows (B for greedy, B_active * K
// for beam search), S padded source length, V target vocabulary.
//
// Both searches run the model's StepDecoder (models/seq2seq.h) one step at a
// time for all unfinished sentences together, on one decoder state made once
// (StepDecoder::start: B rows for greedy, B * K for beam search, and the
// longest sentence's step limit) and updated in place by every step; a
// sentence that finishes leaves the batch (its rows are dropped from the
// state by DecoderState::gather; decoder rows name their sentence, so the
// encoder memory is never copied), so late steps cost only what the long
// sentences need. Beam search keeps live hypotheses only: one row per
// sentence at the first step, at most K after, gathered by parent index
// after each step.
//
// Scores: log_prob is the sum of log p over the emitted tokens including EOS;
// score = log_prob / length^length_penalty with length = tokens + 1 (EOS) for a
// finished hypothesis (fairseq's lenpen; 0 = raw sum). Beam search ranks
// partial hypotheses by log_prob and finished ones by score. An extension to
// EOS among a step's top K completes a hypothesis; a sentence is done
// (SearchOptions::stop) when K hypotheses are complete (fairseq's rule, the
// default) or when the step's best extension is EOS and nbest hypotheses are
// complete (OpenNMT's: sooner, but it favours short hypotheses, since a
// partial's raw log_prob only falls, and the length penalty then has little to
// choose from), or at the length limit, where its live beams join the
// finished ones. At beam 1 both are exactly greedy search.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/decode/shortlist.h"
#include "attn/models/seq2seq.h"

namespace attn::decode {

// When beam search ends a sentence (see the file comment).
enum class BeamStop {
  Complete,  // K hypotheses complete (fairseq)
  TopEnded,  // the step's best extension is EOS and nbest hypotheses complete (OpenNMT)
};
// "complete" / "top-ended" (std::invalid_argument naming both otherwise), and back.
BeamStop beam_stop(const std::string& name);
const char* beam_stop_name(BeamStop s);

struct SearchOptions {
  int beam = 1;                  // K: hypotheses kept per sentence (1 = greedy)
  BeamStop stop = BeamStop::Complete;
  int nbest = 1;                 // hypotheses returned per sentence, best first (<= beam)
  double length_penalty = 1.0;   // alpha in score = log_prob / length^alpha (0: raw log-probability)
  double max_len_ratio = 2.0;    // at most max_len_ratio * src_len + max_len_offset steps (EOS included)
  int64_t max_len_offset = 5;    // see max_len_ratio
  bool alignments = true;        // keep each hypothesis' attention weights (of attention_map)
  // The attention map the alignments hold: a name of model.attention_maps(),
  // or "" for the model's default (the first). An unknown name is refused
  // (std::invalid_argument listing the model's maps) even without alignments.
  std::string attention_map;
  // The model's decoder weights prepared once for many searches
  // (model.prepare_decoder() for at least the search's rows: B * beam), or
  // nullptr: each search prepares its own.
  std::shared_ptr<const models::PreparedDecoder> prepared;
  // The element type of the search's products (fp32, int8, bf16:
  // nn/step_weight_types.h), for a search that prepares its own weights;
  // `prepared` was made for one type already (prepare_decoder(rows, compute)).
  nn::StepWeightType compute = nn::StepWeightType::F32;
  // A vocabulary shortlist, or nullptr (the whole vocabulary): each search
  // produces only its batch's candidates (Shortlist::candidates of src), its
  // log-probabilities renormalised over them.
  std::shared_ptr<const Shortlist> shortlist;
};

struct Hypothesis {
  std::vector<int> tokens;       // target ids without BOS / EOS
  double log_prob = 0;           // sum of log-probabilities of tokens (+ EOS when finished)
  double score = 0;              // log_prob / length^length_penalty
  bool finished = false;         // ended with EOS (false: stopped at the length limit)
  std::vector<float> attention;  // [steps, src_len] row-major weights of the options' attention_map, steps = tokens + finished
};

struct SearchResult {
  int64_t src_len = 0;                  // source length of this sentence
  std::vector<Hypothesis> hypotheses;   // nbest hypotheses, best score first
};

// Throws std::invalid_argument on options out of range (beam < 1, nbest
// outside [1, beam], negative ratio) or sources the model rejects.
// src [B, S], lengths [B] in [1, S] -> B results. A captioner reads images
// src [B, 3, H, W] with lengths [B] = its grid's cells (the columns of each
// step's attention; set max_len_ratio 0 so that they do not set the length limit).
std::vector<SearchResult> greedy_search(const models::Seq2SeqModel& model, const Tensor& src,
                                        const std::vector<int64_t>& lengths, const SearchOptions& options = {});
std::vector<SearchResult> beam_search(const models::Seq2SeqModel& model, const Tensor& src,
                                      const std::vector<int64_t>& lengths, const SearchOptions& options = {});
// beam_search when options.beam > 1 or nbest > 1, else greedy_search.
std::vector<SearchResult> search(const models::Seq2SeqModel& model, const Tensor& src,
                                 const std::vector<int64_t>& lengths, const SearchOptions& options = {});

}  // namespace attn::decode
