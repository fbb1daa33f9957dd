#include "attn/train/translation_task.h"

#include <cstdio>

#include "attn/data/batcher.h"
#include "attn/train/run_data.h"
#include "attn/train/seed.h"
#include "attn/train/validator.h"

namespace attn::train {
namespace {

data::Batcher make_batcher(const RunData& d, const TrainOptions& t) {
  data::BatchOptions bo;
  bo.max_tokens = t.max_tokens;
  bo.max_sentences = t.max_sentences;
  bo.seed = derive_seed(t.seed, "data");
  bo.specials = d.tgt_vocab.specials();
  return data::Batcher(d.train, bo);
}

class TranslationTask : public TrainingTask {
public:
  TranslationTask(const TrainConfig& config, bool resume, const PrintFn& print)
      : data_(prepare_run_data(config, resume, print)),
        batcher_(make_batcher(data_, config.train)),
        validator_(data_.corpora.valid, data_.src_vocab, data_.tgt_vocab, config.train) {}

  models::ModelConfig model_config(const models::ModelConfig& config) const override {
    models::ModelConfig c = config;
    c.src_vocab = data_.src_vocab.size();
    c.tgt_vocab = data_.tgt_vocab.size();
    c.specials = data_.tgt_vocab.specials();
    models::validate(c);
    return c;
  }

  std::vector<std::vector<int64_t>> plan_epoch(uint64_t epoch) const override { return batcher_.plan_epoch(epoch); }

  data::Seq2SeqBatch make_batch(const std::vector<int64_t>& indices) const override {
    return batcher_.make_batch(indices);
  }

  int64_t target_tokens(const std::vector<int64_t>& indices) const override {
    return batcher_.target_tokens(indices);
  }

  Validation validate(models::Seq2SeqModel& model) const override { return validator_.run(model); }

  std::string describe() const override {
    const data::FilterReport& r = data_.filtered;
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "vocab %d/%d | train %lld pairs (%lld dropped: %lld empty, %lld long, %lld ratio) | valid %lld",
                  data_.src_vocab.size(), data_.tgt_vocab.size(), (long long)data_.train.size(),
                  (long long)(r.empty + r.too_long + r.bad_ratio), (long long)r.empty, (long long)r.too_long,
                  (long long)r.bad_ratio, (long long)data_.corpora.valid.size());
    return buf;
  }

private:
  RunData data_;
  data::Batcher batcher_;
  Validator validator_;
};

}  // namespace

std::unique_ptr<TrainingTask> make_translation_task(const TrainConfig& config, bool resume, const PrintFn& print) {
  return std::make_unique<TranslationTask>(config, resume, print);
}

}  // namespace attn::train
