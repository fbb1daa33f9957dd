#include "attn/decode/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "attn/autograd/node.h"

namespace attn::decode {
namespace {

void check(const models::Seq2SeqModel& model, const Tensor& src, const std::vector<int64_t>& lengths,
           const SearchOptions& o) {
  if (o.beam < 1) throw std::invalid_argument("search: beam " + std::to_string(o.beam) + " < 1");
  if (o.nbest < 1 || o.nbest > o.beam)
    throw std::invalid_argument("search: nbest " + std::to_string(o.nbest) + " outside [1, beam = " +
                                std::to_string(o.beam) + "]");
  if (!(o.max_len_ratio >= 0) || o.max_len_offset < 0)
    throw std::invalid_argument("search: max_len_ratio and max_len_offset must be >= 0");
  if (!(o.length_penalty >= 0)) throw std::invalid_argument("search: length_penalty must be >= 0");
  if (model.is_training())
    throw std::logic_error("search: the model is in training mode (dropout active); call model.train(false) first");
  // the model's encode() checks the rest of src's shape (ids or images)
  if (!src.defined() || src.dim() < 2 || int64_t(lengths.size()) != src.size(0))
    throw std::invalid_argument("search: expects src [B, S] (or images [B, 3, H, W]) and B lengths");
  models::resolve_attention_map(model, o.attention_map);  // an unknown name is refused, alignments or not
}

// The model's decoder for a search of src (its lengths) in at most max_rows
// rows, reporting the options' attention map when the search keeps alignments
// (else none), restricted to the batch's shortlist when the options have one.
// The weights a search of up to max_rows rows reads: the caller's, or prepared
// now for a reduced-precision type (fp32: null, the decoder prepares its own).
std::shared_ptr<const models::PreparedDecoder> prepared_for(const models::Seq2SeqModel& model, int64_t max_rows,
                                                            const SearchOptions& o) {
  if (o.prepared || o.compute == nn::StepWeightType::F32) return o.prepared;
  return model.prepare_decoder(max_rows, o.compute);
}

std::unique_ptr<models::StepDecoder> make_decoder(const models::Seq2SeqModel& model, const models::Encoded& e,
                                                  int64_t max_rows,
                                                  std::shared_ptr<const models::PreparedDecoder> prepared,
                                                  const SearchOptions& o, const Tensor& src,
                                                  const std::vector<int64_t>& lengths) {
  std::unique_ptr<models::StepDecoder> decoder = model.decoder(e.memory, max_rows, std::move(prepared));
  if (o.alignments) decoder->report_attention(models::resolve_attention_map(model, o.attention_map));
  if (o.shortlist) decoder->restrict_vocabulary(o.shortlist->candidates(src, lengths));
  return decoder;
}

int64_t max_steps(const SearchOptions& o, int64_t src_len) {
  return std::max<int64_t>(1, int64_t(o.max_len_ratio * double(src_len)) + o.max_len_offset);
}

// The most steps any sentence of the batch may take: the state's cache size.
int64_t longest(const SearchOptions& o, const std::vector<int64_t>& lengths) {
  int64_t n = 1;
  for (int64_t len : lengths) n = std::max(n, max_steps(o, len));
  return n;
}

void finalize(Hypothesis& h, double alpha) {
  const double len = double(h.tokens.size() + (h.finished ? 1 : 0));
  h.score = alpha == 0 || len == 0 ? h.log_prob : h.log_prob / std::pow(len, alpha);
}

// weights [N, S]: StepTop::attention, the map the search asked for
void append_attention(std::vector<float>& dst, const Tensor& weights, int64_t row, int64_t src_len) {
  if (!weights.defined()) throw std::logic_error("search: the decoder step reported no attention map");
  const float* w = weights.data() + row * weights.size(1);
  dst.insert(dst.end(), w, w + src_len);
}

}  // namespace

std::vector<SearchResult> greedy_search(const models::Seq2SeqModel& model, const Tensor& src,
                                        const std::vector<int64_t>& lengths, const SearchOptions& o) {
  check(model, src, lengths, o);
  NoGradGuard no_grad;
  const int64_t B = src.size(0);
  std::vector<SearchResult> results(static_cast<size_t>(B));
  std::vector<Hypothesis> hyp(static_cast<size_t>(B));
  std::shared_ptr<const models::PreparedDecoder> prepared = prepared_for(model, B, o);
  models::Encoded e = model.encode_for_search(src, lengths, prepared.get());
  std::unique_ptr<models::StepDecoder> decoder = make_decoder(model, e, B, prepared, o, src, lengths);
  models::DecoderState state = decoder->start(e.state, B, longest(o, lengths));
  std::vector<int64_t> sent(static_cast<size_t>(B));  // decoder row -> sentence
  for (int64_t b = 0; b < B; ++b) sent[size_t(b)] = b;
  const data::SpecialIds& ids = model.config().specials;
  std::vector<int> prev(static_cast<size_t>(B), ids.bos);
  for (int64_t t = 0; !sent.empty(); ++t) {
    const models::StepTop& out = decoder->step(sent, state, prev, 1, t);  // each row's first maximum
    std::vector<int64_t> keep;
    std::vector<int> next;
    for (size_t i = 0; i < sent.size(); ++i) {
      const int64_t b = sent[i];
      Hypothesis& h = hyp[size_t(b)];
      const int best = out.tokens[i];
      h.log_prob += double(out.log_probs[i]);
      if (o.alignments) append_attention(h.attention, out.attention, int64_t(i), lengths[size_t(b)]);
      if (best == ids.eos) {
        h.finished = true;
        continue;
      }
      h.tokens.push_back(best);
      if (int64_t(h.tokens.size()) >= max_steps(o, lengths[size_t(b)])) continue;  // length limit
      keep.push_back(int64_t(i));
      next.push_back(best);
    }
    if (keep.size() != sent.size() && !keep.empty()) {  // finished sentences leave the batch
      state.gather(keep);
      std::vector<int64_t> s2;
      for (int64_t i : keep) s2.push_back(sent[size_t(i)]);
      sent = std::move(s2);
    } else if (keep.empty()) {
      sent.clear();
    }
    prev = std::move(next);
  }
  for (int64_t b = 0; b < B; ++b) {
    finalize(hyp[size_t(b)], o.length_penalty);
    results[size_t(b)].src_len = lengths[size_t(b)];
    results[size_t(b)].hypotheses = {std::move(hyp[size_t(b)])};
  }
  return results;
}

namespace {

// An extension of a live hypothesis by one token.
struct Candidate {
  double score;  // log_prob of the extended hypothesis
  float lp;      // the new token's log-probability
  int64_t row;   // the decoder row of the hypothesis it extends
  int token;
};

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.lp != b.lp) return a.lp > b.lp;
  if (a.row != b.row) return a.row < b.row;
  return a.token < b.token;
}

// The best extensions of one sentence's rows [r0, r1), best first: each row's
// `want` best tokens (out.tokens), cut to the 2K best (at most K are EOS, one
// per row, so the best 2K hold the sentence's K continuations).
void rank_candidates(const models::StepTop& out, const std::vector<Hypothesis>& beams, size_t r0, size_t r1,
                     int64_t want, int64_t K, std::vector<Candidate>& cands) {
  cands.clear();
  for (size_t r = r0; r < r1; ++r) {
    const double base = beams[r].log_prob;
    for (int64_t j = 0; j < want; ++j) {
      const float lp = out.log_probs[r * size_t(want) + size_t(j)];
      cands.push_back({base + double(lp), lp, int64_t(r), out.tokens[r * size_t(want) + size_t(j)]});
    }
  }
  std::sort(cands.begin(), cands.end(), ranks_before);
  if (int64_t(cands.size()) > 2 * K) cands.resize(size_t(2 * K));
}

// One sentence's hypotheses after a step: an EOS among the top K ranks
// completes a hypothesis (fairseq's rule) into `finished`; the first K
// candidates that are not EOS continue, with their parent rows in `parents`.
std::vector<Hypothesis> extend(const std::vector<Candidate>& cands, const std::vector<Hypothesis>& beams,
                               const models::StepTop& out, const SearchOptions& o, int eos, int64_t src_len,
                               std::vector<Hypothesis>& finished, std::vector<int64_t>& parents) {
  const int64_t K = o.beam;
  std::vector<Hypothesis> cont;
  for (size_t rank = 0; rank < cands.size() && int64_t(cont.size()) < K; ++rank) {
    const Candidate& c = cands[rank];
    Hypothesis h;
    h.tokens = beams[size_t(c.row)].tokens;
    h.log_prob = c.score;
    if (o.alignments) {
      h.attention = beams[size_t(c.row)].attention;
      append_attention(h.attention, out.attention, c.row, src_len);
    }
    if (c.token == eos) {
      if (int64_t(rank) < K) {
        h.finished = true;
        finalize(h, o.length_penalty);
        finished.push_back(std::move(h));
      }
      continue;
    }
    h.tokens.push_back(c.token);
    cont.push_back(std::move(h));
    parents.push_back(c.row);
  }
  return cont;
}

// A sentence's result: its finished hypotheses (with the live ones, unfinished,
// when the search stopped at the length limit: join_live), the n-best by score.
SearchResult end_sentence(std::vector<Hypothesis>& finished, std::vector<Hypothesis>& live, bool join_live,
                          const SearchOptions& o, int64_t src_len) {
  if (join_live)  // the length limit: live beams end unfinished and compete too
    for (Hypothesis& h : live) {
      finalize(h, o.length_penalty);
      finished.push_back(std::move(h));
    }
  std::stable_sort(finished.begin(), finished.end(),
                   [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
  if (int64_t(finished.size()) > o.nbest) finished.resize(size_t(o.nbest));
  SearchResult r;
  r.src_len = src_len;
  r.hypotheses = std::move(finished);
  return r;
}

}  // namespace

BeamStop beam_stop(const std::string& name) {
  if (name == "complete") return BeamStop::Complete;
  if (name == "top-ended") return BeamStop::TopEnded;
  throw std::invalid_argument("beam stop '" + name + "': expects complete or top-ended");
}

const char* beam_stop_name(BeamStop s) { return s == BeamStop::Complete ? "complete" : "top-ended"; }

std::vector<SearchResult> beam_search(const models::Seq2SeqModel& model, const Tensor& src,
                                      const std::vector<int64_t>& lengths, const SearchOptions& o) {
  check(model, src, lengths, o);
  NoGradGuard no_grad;
  const int64_t B = src.size(0), K = o.beam;
  std::vector<SearchResult> results(static_cast<size_t>(B));
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(B));
  std::shared_ptr<const models::PreparedDecoder> prepared = prepared_for(model, B * K, o);
  models::Encoded e = model.encode_for_search(src, lengths, prepared.get());
  std::unique_ptr<models::StepDecoder> decoder = make_decoder(model, e, B * K, prepared, o, src, lengths);
  // Decoder rows hold the live hypotheses only, each sentence's contiguous and
  // in rank order; rows[r] is row r's sentence. A sentence starts with one row
  // (its K beams would all be the same BOS hypothesis, and only one is ever
  // extended) and has up to K afterwards.
  std::vector<int64_t> act(static_cast<size_t>(B)), rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) act[size_t(b)] = rows[size_t(b)] = b;
  models::DecoderState state = decoder->start(e.state, B * K, longest(o, lengths));
  std::vector<Hypothesis> beams(static_cast<size_t>(B));
  const data::SpecialIds& ids = model.config().specials;
  std::vector<int> prev(static_cast<size_t>(B), ids.bos);
  std::vector<Candidate> cands;
  for (int64_t step = 0; !act.empty(); ++step) {
    // The best K + 1 extensions of each row suffice: a sentence continues with its first K
    // non-EOS candidates in rank order, and a row's K + 1 best hold at least K that are not
    // EOS (a row has one EOS token), so no candidate ranked lower in its row can come before
    // the sentence's K-th continuation. (fairseq draws 2K per sentence; K + 1 per row gives
    // the same continuations and ends, with less top-k work per step.)
    const int64_t want = std::min<int64_t>(K + 1, model.config().tgt_vocab);
    const models::StepTop& out = decoder->step(rows, state, prev, want, step);
    std::vector<int64_t> parents, next_act, next_rows;
    std::vector<Hypothesis> next_beams;
    std::vector<int> next_prev;
    size_t r0 = 0;  // the first row of act[a]
    for (size_t a = 0; a < act.size(); ++a) {
      const int64_t b = act[a], src_len = lengths[size_t(b)];
      size_t r1 = r0;
      while (r1 < rows.size() && rows[r1] == b) ++r1;
      rank_candidates(out, beams, r0, r1, want, K, cands);
      r0 = r1;
      std::vector<int64_t> cont_parents;
      std::vector<Hypothesis> cont = extend(cands, beams, out, o, ids.eos, src_len, finished[size_t(b)], cont_parents);
      // Done when K hypotheses are complete (fairseq), or when the best
      // extension of this step ends the sentence and n-best are complete
      // (OpenNMT: weaker hypotheses that end early do not stop the search
      // while the top beam is still going); else at the limit.
      const int64_t complete = int64_t(finished[size_t(b)].size());
      const bool top_ended = !cands.empty() && cands[0].token == ids.eos;
      const bool by_rule = o.stop == BeamStop::Complete ? complete >= K : top_ended && complete >= o.nbest;
      const bool at_limit = step + 1 >= max_steps(o, src_len);
      if (by_rule || at_limit || cont.empty()) {
        const bool join_live = o.stop == BeamStop::Complete ? !by_rule : !top_ended;
        results[size_t(b)] = end_sentence(finished[size_t(b)], cont, join_live, o, src_len);
        continue;
      }
      // the live continuations (fewer than K only with a tiny vocabulary) become the sentence's rows
      next_act.push_back(b);
      for (size_t k = 0; k < cont.size(); ++k) {
        next_rows.push_back(b);
        parents.push_back(cont_parents[k]);
        next_prev.push_back(cont[k].tokens.back());
        next_beams.push_back(std::move(cont[k]));
      }
    }
    if (next_act.empty()) break;
    state.gather(parents);  // the surviving hypotheses' rows, in place of the step's rows
    act = std::move(next_act);
    rows = std::move(next_rows);
    beams = std::move(next_beams);
    prev = std::move(next_prev);
  }
  return results;
}

std::vector<SearchResult> search(const models::Seq2SeqModel& model, const Tensor& src,
                                 const std::vector<int64_t>& lengths, const SearchOptions& o) {
  return o.beam > 1 || o.nbest > 1 ? beam_search(model, src, lengths, o) : greedy_search(model, src, lengths, o);
}

}  // namespace attn::decode
