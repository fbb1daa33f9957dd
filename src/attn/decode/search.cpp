#include "attn/decode/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attn/autograd/node.h"

namespace attn::decode {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

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
  if (!src.defined() || src.dim() != 2 || int64_t(lengths.size()) != src.size(0))
    throw std::invalid_argument("search: expects src [B, S] and B lengths");
}

int64_t max_steps(const SearchOptions& o, int64_t src_len) {
  return std::max<int64_t>(1, int64_t(o.max_len_ratio * double(src_len)) + o.max_len_offset);
}

void finalize(Hypothesis& h, double alpha) {
  const double len = double(h.tokens.size() + (h.finished ? 1 : 0));
  h.score = alpha == 0 || len == 0 ? h.log_prob : h.log_prob / std::pow(len, alpha);
}

void append_attention(std::vector<float>& dst, const Tensor& weights, int64_t row, int64_t src_len) {
  const float* w = weights.data() + row * weights.size(1);
  dst.insert(dst.end(), w, w + src_len);
}

Tensor ids_tensor(const std::vector<int>& ids) {
  Tensor t = Tensor::empty({int64_t(ids.size())});
  for (size_t i = 0; i < ids.size(); ++i) t.data()[i] = float(ids[i]);
  return t;
}

}  // namespace

std::vector<SearchResult> greedy_search(const models::Seq2SeqModel& model, const Tensor& src,
                                        const std::vector<int64_t>& lengths, const SearchOptions& o) {
  check(model, src, lengths, o);
  NoGradGuard no_grad;
  const int64_t B = src.size(0);
  std::vector<SearchResult> results(static_cast<size_t>(B));
  std::vector<Hypothesis> hyp(static_cast<size_t>(B));
  models::Encoded e = model.encode(src, lengths);
  models::EncoderMemory memory = e.memory;
  models::DecoderState state = e.state;
  std::vector<int64_t> sent(static_cast<size_t>(B));  // decoder row -> sentence
  for (int64_t b = 0; b < B; ++b) sent[size_t(b)] = b;
  std::vector<int> prev(static_cast<size_t>(B), data::kBos);
  while (!sent.empty()) {
    models::StepOutput out = model.step(memory, state, ids_tensor(prev));
    const int64_t V = out.log_probs.size(1);
    std::vector<int64_t> keep;
    std::vector<int> next;
    for (size_t i = 0; i < sent.size(); ++i) {
      const int64_t b = sent[i];
      Hypothesis& h = hyp[size_t(b)];
      const float* lp = out.log_probs.data() + int64_t(i) * V;
      const int best = int(std::max_element(lp, lp + V) - lp);  // first maximum
      h.log_prob += double(lp[best]);
      if (o.alignments) append_attention(h.attention, out.weights, int64_t(i), lengths[size_t(b)]);
      if (best == data::kEos) {
        h.finished = true;
        continue;
      }
      h.tokens.push_back(best);
      if (int64_t(h.tokens.size()) >= max_steps(o, lengths[size_t(b)])) continue;  // length limit
      keep.push_back(int64_t(i));
      next.push_back(best);
    }
    if (keep.size() == sent.size()) {
      state = std::move(out.state);
    } else if (!keep.empty()) {  // finished sentences leave the batch
      memory = models::select_rows(memory, keep);
      state = models::select_rows(out.state, keep);
      std::vector<int64_t> s2;
      for (int64_t i : keep) s2.push_back(sent[size_t(i)]);
      sent = std::move(s2);
    } else {
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

std::vector<SearchResult> beam_search(const models::Seq2SeqModel& model, const Tensor& src,
                                      const std::vector<int64_t>& lengths, const SearchOptions& o) {
  check(model, src, lengths, o);
  NoGradGuard no_grad;
  const int64_t B = src.size(0), K = o.beam;
  std::vector<SearchResult> results(static_cast<size_t>(B));
  std::vector<std::vector<Hypothesis>> finished(static_cast<size_t>(B));
  models::Encoded e = model.encode(src, lengths);
  // Rows a * K + k hold beam k of active sentence act[a]; all K rows of a
  // sentence share its encoder memory.
  std::vector<int64_t> act(static_cast<size_t>(B)), expand;
  for (int64_t b = 0; b < B; ++b) {
    act[size_t(b)] = b;
    for (int64_t k = 0; k < K; ++k) expand.push_back(b);
  }
  models::EncoderMemory memory = models::select_rows(e.memory, expand);
  models::DecoderState state = models::select_rows(e.state, expand);
  std::vector<Hypothesis> beams(static_cast<size_t>(B * K));
  for (int64_t r = 0; r < B * K; ++r)
    if (r % K) beams[size_t(r)].log_prob = kNegInf;  // only beam 0 is live at the start
  std::vector<int> prev(static_cast<size_t>(B * K), data::kBos);

  struct Candidate {
    double score;  // log_prob of the extended hypothesis
    float lp;      // the new token's log-probability
    int64_t row;
    int token;
  };
  auto better = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.lp != b.lp) return a.lp > b.lp;
    if (a.row != b.row) return a.row < b.row;
    return a.token < b.token;
  };
  std::vector<Candidate> cands;
  std::vector<int> top;
  for (int64_t step = 0; !act.empty(); ++step) {
    models::StepOutput out = model.step(memory, state, ids_tensor(prev));
    const int64_t V = out.log_probs.size(1);
    const int64_t want = std::min<int64_t>(2 * K, V);
    std::vector<int64_t> parents, next_act, memory_rows;
    std::vector<Hypothesis> next_beams;
    std::vector<int> next_prev;
    for (size_t a = 0; a < act.size(); ++a) {
      const int64_t b = act[a], src_len = lengths[size_t(b)];
      // the best 2K extensions over the sentence's K beams x V tokens
      cands.clear();
      for (int64_t k = 0; k < K; ++k) {
        const int64_t r = int64_t(a) * K + k;
        const double base = beams[size_t(r)].log_prob;
        if (base == kNegInf) continue;
        // top `want` tokens of the row: one scan, a small sorted list (lp desc, token asc)
        const float* lp = out.log_probs.data() + r * V;
        top.clear();
        for (int64_t v = 0; v < V; ++v) {
          if (int64_t(top.size()) == want && !(lp[v] > lp[top.back()])) continue;
          if (int64_t(top.size()) == want) top.pop_back();
          auto pos = std::upper_bound(top.begin(), top.end(), int(v), [&](int x, int y) { return lp[x] > lp[y]; });
          top.insert(pos, int(v));
        }
        for (int v : top) cands.push_back({base + double(lp[v]), lp[v], r, v});
      }
      std::sort(cands.begin(), cands.end(), better);
      if (int64_t(cands.size()) > want) cands.resize(size_t(want));
      const bool at_limit = step + 1 >= max_steps(o, src_len);
      std::vector<Hypothesis> cont;
      std::vector<int64_t> cont_parent;
      for (size_t rank = 0; rank < cands.size() && int64_t(cont.size()) < K; ++rank) {
        const Candidate& c = cands[rank];
        Hypothesis h;
        h.tokens = beams[size_t(c.row)].tokens;
        h.log_prob = c.score;
        if (o.alignments) {
          h.attention = beams[size_t(c.row)].attention;
          append_attention(h.attention, out.weights, c.row, src_len);
        }
        if (c.token == data::kEos) {
          // an end among the top K ranks completes a hypothesis (fairseq's rule)
          if (int64_t(rank) < K) {
            h.finished = true;
            finalize(h, o.length_penalty);
            finished[size_t(b)].push_back(std::move(h));
          }
          continue;
        }
        h.tokens.push_back(c.token);
        cont.push_back(std::move(h));
        cont_parent.push_back(c.row);
      }
      // Done when the best extension of this step ends the sentence (OpenNMT's
      // rule: weaker hypotheses that end early do not stop the search while
      // the top beam is still going) and n-best are complete, or at the limit.
      const bool top_ended = !cands.empty() && cands[0].token == data::kEos;
      const bool done = (top_ended && int64_t(finished[size_t(b)].size()) >= o.nbest) || at_limit || cont.empty();
      if (done) {
        if (!top_ended)  // the length limit: live beams end unfinished and compete too
          for (Hypothesis& h : cont) {
            finalize(h, o.length_penalty);
            finished[size_t(b)].push_back(std::move(h));
          }
        auto& f = finished[size_t(b)];
        std::stable_sort(f.begin(), f.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
        if (int64_t(f.size()) > o.nbest) f.resize(size_t(o.nbest));
        results[size_t(b)].src_len = src_len;
        results[size_t(b)].hypotheses = std::move(f);
        continue;
      }
      // fewer than K live extensions (tiny vocabularies): dead rows fill the beam
      while (int64_t(cont.size()) < K) {
        Hypothesis dead;
        dead.log_prob = kNegInf;
        cont.push_back(dead);
        cont_parent.push_back(cont_parent.front());
      }
      next_act.push_back(b);
      for (int64_t k = 0; k < K; ++k) {
        memory_rows.push_back(int64_t(a) * K);
        parents.push_back(cont_parent[size_t(k)]);
        next_prev.push_back(cont[size_t(k)].tokens.empty() ? data::kBos : cont[size_t(k)].tokens.back());
        next_beams.push_back(std::move(cont[size_t(k)]));
      }
    }
    if (next_act.empty()) break;
    state = models::select_rows(out.state, parents);
    if (next_act.size() != act.size()) memory = models::select_rows(memory, memory_rows);
    act = std::move(next_act);
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
