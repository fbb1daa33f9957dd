#include "attn/decode/translator.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "attn/data/utf8.h"

namespace attn::decode {

std::vector<Translation> translate_lines(const models::Seq2SeqModel& model, const data::SubwordVocab& src_vocab,
                                         const data::SubwordVocab& tgt_vocab, const std::vector<std::string>& lines,
                                         const TranslateOptions& options) {
  if (options.batch_sentences < 1) throw std::invalid_argument("translate: batch_sentences must be >= 1");
  auto line_name = [&](size_t i) { return "line " + std::to_string(options.first_line + int64_t(i)); };
  for (size_t i = 0; i < lines.size(); ++i) {
    size_t bad = data::find_invalid_utf8(lines[i]);
    if (bad != std::string::npos) throw std::invalid_argument(line_name(i) + ": invalid UTF-8 at byte " + std::to_string(bad));
  }
  std::vector<std::vector<int>> ids = src_vocab.encode_all(lines);
  std::vector<Translation> out(lines.size());
  for (size_t i = 0; i < ids.size(); ++i) {  // the over-long line rule, before anything is decoded
    const int64_t n = int64_t(ids[i].size()), limit = options.max_src_tokens;
    if (limit <= 0 || n <= limit) continue;
    if (options.long_lines == LongLines::Error)
      throw std::invalid_argument(line_name(i) + ": " + std::to_string(n) + " source pieces, over the limit of " +
                                  std::to_string(limit));
    out[i].over_long_pieces = n;
    if (options.long_lines == LongLines::Skip) ids[i].clear();
    else ids[i].resize(size_t(limit));
  }
  SearchOptions so = options.search;
  if (!so.prepared) so.prepared = model.prepare_decoder(options.batch_sentences * so.beam, so.compute);  // once for all batches
  std::vector<size_t> order;
  for (size_t i = 0; i < lines.size(); ++i)
    if (!ids[i].empty()) order.push_back(i);
  // longest first: batches of similar lengths waste little on padding
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() > ids[b].size(); });
  for (size_t start = 0; start < order.size(); start += size_t(options.batch_sentences)) {
    const size_t end = std::min(order.size(), start + size_t(options.batch_sentences));
    const int64_t B = int64_t(end - start), S = int64_t(ids[order[start]].size());
    Tensor src = Tensor::zeros({B, S});
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < B; ++b) {
      const auto& s = ids[order[start + size_t(b)]];
      lengths.push_back(int64_t(s.size()));
      for (size_t j = 0; j < s.size(); ++j) src.data()[b * S + int64_t(j)] = float(s[j]);
    }
    std::vector<SearchResult> res = search(model, src, lengths, so);
    for (int64_t b = 0; b < B; ++b) {
      const size_t line = order[start + size_t(b)];
      Translation& t = out[line];
      for (int id : ids[line]) t.src_pieces.push_back(src_vocab.piece(id));
      for (Hypothesis& h : res[size_t(b)].hypotheses) {
        TranslatedHypothesis th;
        th.text = tgt_vocab.decode(h.tokens);
        for (int id : h.tokens) th.pieces.push_back(tgt_vocab.piece(id));
        th.score = h.score;
        th.log_prob = h.log_prob;
        th.finished = h.finished;
        th.attention = std::move(h.attention);
        t.hypotheses.push_back(std::move(th));
      }
    }
  }
  return out;
}

}  // namespace attn::decode
