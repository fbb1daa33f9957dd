// Beam search written out over the full distribution, for one sentence: the
// rules search.h states (every (hypothesis, token) ranked by score, then the
// token's log p, then row, then id; an EOS among the top K ranks completes a
// hypothesis, the first K other candidates continue; done when K hypotheses
// are complete (BeamStop::Complete) or when the best candidate is EOS and
// n-best are complete (TopEnded), or at the length limit, where the live
// hypotheses join the finished ones). The caller's step function
// computes each live hypothesis' next-token distribution however it likes
// (test_decode.cpp: step() on a state gathered by parent; test_decoder_state.cpp:
// the whole prefix recomputed), so the searches' bookkeeping is compared
// against this one and not against itself.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "attn/decode/search.h"
#include "attn/tensor/random.h"
#include "attn/tensor/tensor.h"

namespace attn::testing {

// A padded source batch for the decoding tests: src [B, S] with ids drawn
// uniformly from [first, vocab) up to each row's length, 0 (padding) past it.
struct SourceBatch {
  Tensor src;                    // [B, S]
  std::vector<int64_t> lengths;  // [B], each in [1, S]
};

inline SourceBatch random_source_batch(const std::vector<int64_t>& lengths, int64_t S, int64_t first, int64_t vocab,
                                       uint64_t seed) {
  const int64_t B = int64_t(lengths.size());
  SourceBatch b{Tensor::zeros({B, S}), lengths};
  Rng rng(seed);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < lengths[size_t(i)]; ++j)
      b.src.data()[i * S + j] = float(first + int64_t(rng.below(uint64_t(vocab - first))));
  return b;
}

// One step of the reference: for live hypotheses [R], log p [R * V] and the
// attention weights [R][src_len] each appends (empty: none kept).
struct ReferenceStep {
  std::vector<float> log_probs;
  std::vector<std::vector<float>> attention;
};

// step(t, live, parents): step t for the live hypotheses; parents[r] is the row
// of step t - 1 that live[r] extends (empty at t = 0, one BOS hypothesis).
using ReferenceStepFn =
    std::function<ReferenceStep(int64_t, const std::vector<decode::Hypothesis>&, const std::vector<int64_t>&)>;

inline std::vector<decode::Hypothesis> reference_beam(int64_t V, int eos, int64_t limit, const decode::SearchOptions& o,
                                                      const ReferenceStepFn& step) {
  const int64_t K = o.beam;
  std::vector<decode::Hypothesis> live(1), done;
  std::vector<int64_t> parents;
  auto finalize = [&](decode::Hypothesis& h) {
    const double n = double(h.tokens.size() + (h.finished ? 1 : 0));
    h.score = o.length_penalty == 0 ? h.log_prob : h.log_prob / std::pow(n, o.length_penalty);
  };
  for (int64_t t = 0;; ++t) {
    const ReferenceStep out = step(t, live, parents);
    struct C {
      double score;
      float lp;
      int64_t row;
      int token;
    };
    std::vector<C> c;
    for (int64_t r = 0; r < int64_t(live.size()); ++r) {
      for (int64_t v = 0; v < V; ++v) {
        const float lp = out.log_probs[size_t(r * V + v)];
        c.push_back({live[size_t(r)].log_prob + double(lp), lp, r, int(v)});
      }
      if (!out.attention.empty())
        live[size_t(r)].attention.insert(live[size_t(r)].attention.end(), out.attention[size_t(r)].begin(),
                                         out.attention[size_t(r)].end());
    }
    std::sort(c.begin(), c.end(), [](const C& a, const C& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.lp != b.lp) return a.lp > b.lp;
      if (a.row != b.row) return a.row < b.row;
      return a.token < b.token;
    });
    std::vector<decode::Hypothesis> next;
    parents.clear();
    for (size_t rank = 0; rank < c.size() && int64_t(next.size()) < K; ++rank) {
      decode::Hypothesis h = live[size_t(c[rank].row)];
      h.log_prob = c[rank].score;
      if (c[rank].token == eos) {
        if (int64_t(rank) < K) {
          h.finished = true;
          finalize(h);
          done.push_back(h);
        }
        continue;
      }
      h.tokens.push_back(c[rank].token);
      next.push_back(h);
      parents.push_back(c[rank].row);
    }
    const bool top_ended = c[0].token == eos;
    const bool by_rule = o.stop == decode::BeamStop::Complete ? int64_t(done.size()) >= K
                                                               : top_ended && int64_t(done.size()) >= o.nbest;
    if (by_rule || t + 1 >= limit || next.empty()) {
      if (o.stop == decode::BeamStop::Complete ? !by_rule : !top_ended)
        for (auto& h : next) finalize(h), done.push_back(h);
      std::stable_sort(done.begin(), done.end(), [](const auto& x, const auto& y) { return x.score > y.score; });
      done.resize(std::min(done.size(), size_t(o.nbest)));
      return done;
    }
    live = next;
  }
}

}  // namespace attn::testing
