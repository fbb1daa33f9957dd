#include "attn/data/toy_tasks.h"

#include <algorithm>

namespace attn::data {

Seq2SeqBatch reverse_digits_batch(int64_t batch, int min_len, int max_len, Rng& rng) {
  Seq2SeqBatch b;
  std::vector<std::vector<int>> src(batch);
  int64_t longest = 0;
  for (auto& s : src) {
    int len = min_len + int(rng.below(uint64_t(max_len - min_len + 1)));
    for (int i = 0; i < len; ++i) s.push_back(kFirstDigit + int(rng.below(10)));
    longest = std::max<int64_t>(longest, len);
  }
  b.src = Tensor::zeros({batch, longest});
  b.tgt_in = Tensor::zeros({batch, longest + 1});
  b.tgt_out = Tensor::zeros({batch, longest + 1});
  for (int64_t i = 0; i < batch; ++i) {
    const auto& s = src[i];
    std::vector<int> t(s.rbegin(), s.rend());
    int64_t n = int64_t(s.size());
    b.src_lengths.push_back(n);
    b.tgt_in.data()[i * (longest + 1)] = kBos;
    for (int64_t j = 0; j < n; ++j) {
      b.src.data()[i * longest + j] = float(s[j]);
      b.tgt_in.data()[i * (longest + 1) + j + 1] = float(t[j]);
      b.tgt_out.data()[i * (longest + 1) + j] = float(t[j]);
    }
    b.tgt_out.data()[i * (longest + 1) + n] = kEos;
    b.targets.push_back(t);
  }
  return b;
}

}  // namespace attn::data
