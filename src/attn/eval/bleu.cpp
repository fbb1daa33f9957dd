#include "attn/eval/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "attn/eval/references.h"
#include "attn/eval/tokenizer_13a.h"

namespace attn::eval {

namespace {

// ngram counts per order: [max_order] map "tok1 tok2 ..." -> count.
// Tokens never contain whitespace, so the space-joined key is unambiguous.
using NgramCounts = std::vector<std::unordered_map<std::string, int64_t>>;

NgramCounts count_ngrams(const std::vector<std::string>& tokens, int max_order) {
  NgramCounts counts(max_order);
  const int64_t len = int64_t(tokens.size());
  for (int n = 1; n <= max_order; ++n) {
    for (int64_t i = 0; i + n <= len; ++i) {
      std::string key = tokens[i];
      for (int64_t j = i + 1; j < i + n; ++j) key.append(" ").append(tokens[j]);
      ++counts[n - 1][key];
    }
  }
  return counts;
}

// sacreBLEU's _get_closest_ref_len: smallest |hyp - ref|, the shorter ref on ties.
int64_t closest_ref_len(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best_diff = -1, best_len = -1;
  for (int64_t r : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - r);
    if (best_diff == -1 || diff < best_diff) {
      best_diff = diff;
      best_len = r;
    } else if (diff == best_diff && r < best_len) {
      best_len = r;
    }
  }
  return best_len;
}

BleuStats segment_stats(const std::string& hyp, const std::vector<std::string_view>& refs,
                        const BleuOptions& options) {
  const int N = options.max_ngram_order;
  // Reference n-grams: per n-gram the max count over the references.
  NgramCounts ref_max(N);
  std::vector<int64_t> ref_lens;
  for (std::string_view r : refs) {
    const std::vector<std::string> toks = bleu_tokens(std::string(r), options.tokenize);
    ref_lens.push_back(int64_t(toks.size()));
    NgramCounts c = count_ngrams(toks, N);
    for (int n = 0; n < N; ++n)
      for (auto& [key, count] : c[n]) {
        int64_t& m = ref_max[n][key];
        m = std::max(m, count);
      }
  }
  const std::vector<std::string> hyp_toks = bleu_tokens(hyp, options.tokenize);
  BleuStats s;
  s.sys_len = int64_t(hyp_toks.size());
  s.ref_len = closest_ref_len(s.sys_len, ref_lens);
  s.correct.assign(N, 0.0);
  s.total.assign(N, 0.0);
  const NgramCounts h = count_ngrams(hyp_toks, N);
  for (int n = 0; n < N; ++n)
    for (const auto& [key, count] : h[n]) {
      s.total[n] += double(count);
      auto it = ref_max[n].find(key);
      if (it != ref_max[n].end()) s.correct[n] += double(std::min(count, it->second));
    }
  return s;
}

void check_options(const BleuOptions& o) {
  if (o.max_ngram_order < 1)
    throw std::invalid_argument("BLEU: max_ngram_order must be >= 1, got " + std::to_string(o.max_ngram_order));
}

double default_smooth_value(const BleuOptions& o) {
  if (o.smooth_value >= 0) return o.smooth_value;
  return o.smooth == BleuSmooth::kFloor ? 0.1 : o.smooth == BleuSmooth::kAddK ? 1.0 : 0.0;
}

// sacreBLEU's my_log: log(0) is a large negative number instead of -inf.
double safe_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

std::vector<std::string> bleu_tokens(const std::string& line, BleuTokenizer tokenize) {
  const std::string_view stripped = rstrip_whitespace(line);
  if (tokenize == BleuTokenizer::kNone) return split_whitespace(stripped);
  return split_whitespace(tokenize_13a(stripped));
}

BleuScore compute_bleu(BleuStats stats, const BleuOptions& options) {
  check_options(options);
  const int N = options.max_ngram_order;
  if (int(stats.correct.size()) != N || int(stats.total.size()) != N)
    throw std::invalid_argument("compute_bleu: stats have " + std::to_string(stats.correct.size()) + " / " +
                                std::to_string(stats.total.size()) + " orders, expected " + std::to_string(N));
  const double smooth_value = default_smooth_value(options);

  BleuScore out;
  out.sys_len = stats.sys_len;
  out.ref_len = stats.ref_len;
  out.ratio = stats.ref_len ? double(stats.sys_len) / double(stats.ref_len) : 0.0;
  if (stats.sys_len < stats.ref_len)
    out.bp = stats.sys_len > 0 ? std::exp(1.0 - double(stats.ref_len) / double(stats.sys_len)) : 0.0;
  else
    out.bp = 1.0;
  out.precisions.assign(N, 0.0);

  const bool any_match = std::any_of(stats.correct.begin(), stats.correct.end(), [](double c) { return c != 0; });
  if (any_match) {
    double smooth_mteval = 1.0;
    int eff_order = N;
    for (int n = 1; n <= N; ++n) {
      double& correct = stats.correct[n - 1];
      double& total = stats.total[n - 1];
      if (options.smooth == BleuSmooth::kAddK && n > 1) {
        correct += smooth_value;
        total += smooth_value;
      }
      if (total == 0) break;
      if (options.effective_order) eff_order = n;
      if (correct == 0) {
        if (options.smooth == BleuSmooth::kExp) {
          smooth_mteval *= 2;
          out.precisions[n - 1] = 100.0 / (smooth_mteval * total);
        } else if (options.smooth == BleuSmooth::kFloor) {
          out.precisions[n - 1] = 100.0 * smooth_value / total;
        }
      } else {
        out.precisions[n - 1] = 100.0 * correct / total;
      }
    }
    double log_sum = 0;
    for (int n = 0; n < eff_order; ++n) log_sum += safe_log(out.precisions[n]);
    out.score = out.bp * std::exp(log_sum / eff_order);
  }
  out.counts = std::move(stats.correct);
  out.totals = std::move(stats.total);
  return out;
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const BleuOptions& options) {
  check_options(options);
  const SegmentReferences segs = collect_references("BLEU", hyps, refs);
  BleuStats sum;
  sum.correct.assign(options.max_ngram_order, 0.0);
  sum.total.assign(options.max_ngram_order, 0.0);
  for (size_t i = 0; i < hyps.size(); ++i) {
    const BleuStats s = segment_stats(hyps[i], segs.per_segment[i], options);
    sum.sys_len += s.sys_len;
    sum.ref_len += s.ref_len;
    for (int n = 0; n < options.max_ngram_order; ++n) {
      sum.correct[n] += s.correct[n];
      sum.total[n] += s.total[n];
    }
  }
  BleuScore score = compute_bleu(std::move(sum), options);
  score.num_refs = segs.num_refs;
  return score;
}

BleuScore sentence_bleu(const std::string& hyp, const std::vector<std::string>& refs, const BleuOptions& options) {
  std::vector<std::vector<std::string>> streams;
  for (const std::string& r : refs) streams.push_back({r});
  return corpus_bleu({hyp}, streams, options);
}

std::string BleuScore::format() const {
  char buf[64];
  std::string s = "BLEU = ";
  std::snprintf(buf, sizeof buf, "%.2f ", score);
  s += buf;
  for (size_t n = 0; n < precisions.size(); ++n) {
    std::snprintf(buf, sizeof buf, n ? "/%.1f" : "%.1f", precisions[n]);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " (BP = %.3f ratio = %.3f ", bp, ratio);
  s += buf;
  s += "hyp_len = " + std::to_string(sys_len) + " ref_len = " + std::to_string(ref_len) + ")";
  return s;
}

std::string bleu_signature(const BleuOptions& options, int num_refs) {
  std::string smooth;
  switch (options.smooth) {
    case BleuSmooth::kExp: smooth = "exp"; break;
    case BleuSmooth::kNone: smooth = "none"; break;
    case BleuSmooth::kFloor: smooth = "floor"; break;
    case BleuSmooth::kAddK: smooth = "add-k"; break;
  }
  if (options.smooth == BleuSmooth::kFloor || options.smooth == BleuSmooth::kAddK) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "[%.2f]", default_smooth_value(options));
    smooth += buf;
  }
  return "nrefs:" + nrefs_string(num_refs) + "|case:mixed|eff:" + (options.effective_order ? "yes" : "no") +
         "|tok:" + (options.tokenize == BleuTokenizer::k13a ? "13a" : "none") + "|smooth:" + smooth;
}

}  // namespace attn::eval
