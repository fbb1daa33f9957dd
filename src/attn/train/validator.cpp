#include "attn/train/validator.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "attn/autograd/node.h"
#include "attn/decode/translator.h"
#include "attn/eval/bleu.h"

namespace attn::train {

Validator::Validator(const data::ParallelCorpus& valid, const data::SubwordVocab& sv, const data::SubwordVocab& tv,
                     const TrainOptions& t)
    : sv_(sv), tv_(tv), t_(t) {
  data::EncodedCorpus enc = data::encode_corpus(valid, sv, tv);
  data::LengthFilter f;
  f.max_src_tokens = f.max_tgt_tokens = int64_t(1) << 30;
  f.max_ratio = 0;
  enc_ = data::filter_by_length(enc, f);
  data::BatchOptions bo;
  bo.shuffle = false;
  bo.max_tokens = t.max_tokens;
  bo.specials = tv.specials();
  for (int64_t i = 0; i < enc_.size(); ++i)  // the budget grows to the longest pair: every pair counts
    bo.max_tokens = std::max<int64_t>(
        bo.max_tokens, int64_t(std::max(enc_.src[size_t(i)].size(), enc_.tgt[size_t(i)].size() + 1)));
  batcher_ = std::make_unique<data::Batcher>(enc_, bo);
  plan_ = batcher_->plan_epoch(0);
  const int64_t n =
      t.valid_bleu_sentences > 0 ? std::min<int64_t>(t.valid_bleu_sentences, valid.size()) : valid.size();
  src_.assign(valid.src.begin(), valid.src.begin() + n);
  ref_.assign(valid.tgt.begin(), valid.tgt.begin() + n);
}

Validation Validator::run(models::Seq2SeqModel& model) const {
  const auto t0 = std::chrono::steady_clock::now();
  model.train(false);
  Validation v;
  {
    NoGradGuard ng;
    double nll = 0;
    int64_t tokens = 0;
    for (const auto& idx : plan_) {
      data::Seq2SeqBatch b = batcher_->make_batch(idx);
      int64_t n = 0;
      for (const auto& t : b.targets) n += int64_t(t.size()) + 1;
      nll += double(model.loss(b).item()) * double(n);
      tokens += n;
    }
    v.perplexity = std::exp(nll / double(std::max<int64_t>(tokens, 1)));
    decode::TranslateOptions o;
    o.search.beam = t_.valid_beam;
    o.search.alignments = false;
    o.batch_sentences = t_.valid_batch_sentences;
    o.max_src_tokens = 0;  // every validation sentence whole, as its perplexity (never cut silently)
    std::vector<decode::Translation> tr = decode::translate_lines(model, sv_, tv_, src_, o);
    std::vector<std::string> hyps;
    for (const auto& x : tr) hyps.push_back(x.hypotheses.empty() ? "" : x.hypotheses[0].text);
    v.bleu = eval::corpus_bleu(hyps, {ref_}).score;
    v.sentences = int64_t(hyps.size());
  }
  model.train(true);
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

}  // namespace attn::train
