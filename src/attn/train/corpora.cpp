#include "attn/train/corpora.h"

#include <stdexcept>

#include "attn/data/augment.h"
#include "attn/data/split.h"
#include "attn/train/seed.h"

namespace attn::train {

Corpora read_corpora(const DataConfig& d) {
  data::TsvOptions tsv;
  tsv.src_column = d.tsv_src_column;
  tsv.tgt_column = d.tsv_tgt_column;
  Corpora c;
  c.train = d.train_tsv.empty() ? data::read_parallel(d.train_src, d.train_tgt) : data::read_tsv(d.train_tsv, tsv);
  if (d.valid_holdout > 0 || d.test_holdout > 0) {
    data::CorpusSplit s = data::split_by_source(c.train, d.valid_holdout, d.test_holdout, derive_seed(d.split_seed, "split"));
    c.train = std::move(s.train);
    c.valid = std::move(s.valid);
    c.test = std::move(s.test);
  }
  if (!d.valid_src.empty()) c.valid = data::read_parallel(d.valid_src, d.valid_tgt);
  if (!d.valid_tsv.empty()) c.valid = data::read_tsv(d.valid_tsv, tsv);
  if (c.train.size() == 0) throw std::invalid_argument("data: the training corpus is empty");
  // after the split: casual copies of held-out sentences must not reach training
  if (d.casual_source_share > 0)
    data::add_casual_sources(c.train, d.casual_source_share, derive_seed(d.split_seed, "casual"));
  if (c.valid.size() == 0) throw std::invalid_argument("data: the validation corpus is empty");
  return c;
}

}  // namespace attn::train
