#include "attn/train/caption_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/data/batcher.h"
#include "attn/data/caption_corpus.h"
#include "attn/decode/search.h"
#include "attn/eval/bleu.h"
#include "attn/image/image_cache.h"
#include "attn/models/kinds.h"
#include "attn/train/run_data.h"
#include "attn/train/seed.h"

namespace attn::train {
namespace {

namespace fs = std::filesystem;

std::string join_tokens(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

// out_dir/vocab.tgt.model: reloaded (resume), copied (vocab.tgt_model) or trained on `captions`.
data::SubwordVocab caption_vocab(const TrainConfig& cfg, const std::vector<std::string>& captions, bool resume,
                                 const PrintFn& print) {
  const std::string path = cfg.train.out_dir + "/vocab.tgt.model";
  const std::string given = cfg.vocab.tgt_model.empty() ? cfg.vocab.src_model : cfg.vocab.tgt_model;
  if (resume) {
    if (!fs::exists(path)) throw std::runtime_error(cfg.train.out_dir + ": cannot resume, vocab.tgt.model missing");
  } else if (!given.empty()) {
    std::error_code ec;
    fs::copy_file(given, path, fs::copy_options::overwrite_existing, ec);
    if (ec) throw std::runtime_error("cannot copy " + given + " to " + path + ": " + ec.message());
  } else {
    data::SubwordVocab::train({&captions}, path, vocab_train_options(cfg.vocab));
    print("trained " + cfg.vocab.type + " SentencePiece vocabulary of " + std::to_string(cfg.vocab.size) +
          " pieces on " + std::to_string(captions.size()) + " training captions");
  }
  return data::SubwordVocab::load(path);
}

// The images of one or more splits with their captions as text.
struct SplitImages {
  std::vector<std::string> paths;                 // [images]
  std::vector<std::vector<std::string>> captions;  // [images][captions] tokens joined by spaces
};

SplitImages split_images(const data::CaptionCorpus& corpus, const std::vector<std::string>& splits,
                         const std::string& json) {
  SplitImages s;
  for (const data::CaptionImage& img : data::select_splits(corpus, splits)) {
    s.paths.push_back(img.path);
    s.captions.emplace_back();
    for (const data::Caption& c : img.captions) s.captions.back().push_back(join_tokens(c.tokens));
  }
  if (s.paths.empty()) throw std::invalid_argument(json + ": no image in split " + splits[0]);
  return s;
}

// One example per (image, caption): src = {image}, tgt = the caption's ids; the
// captions longer than max_tokens (or empty) left out and counted in `dropped`.
data::EncodedCorpus caption_examples(const SplitImages& s, const data::SubwordVocab& vocab, int64_t max_tokens,
                                     int64_t* dropped) {
  data::EncodedCorpus c;
  int64_t n = 0;
  for (size_t i = 0; i < s.paths.size(); ++i)
    for (const std::string& text : s.captions[i]) {
      std::vector<int> ids = vocab.encode(text);
      ++n;
      if (ids.empty() || int64_t(ids.size()) > max_tokens) continue;
      c.src.push_back({int(i)});
      c.tgt.push_back(std::move(ids));
      c.line.push_back(n);
    }
  if (dropped) *dropped = n - c.size();
  return c;
}

data::BatchOptions batch_options(const TrainOptions& t, const data::SubwordVocab& vocab, bool shuffle) {
  data::BatchOptions bo;
  bo.max_tokens = t.max_tokens;
  bo.max_sentences = t.max_sentences;
  bo.seed = derive_seed(t.seed, "data");
  bo.shuffle = shuffle;
  bo.specials = vocab.specials();
  bo.group_sources = true;  // an image's captions in one batch: its CNN pass serves them all
  return bo;
}

struct CaptionData {
  SplitImages train, valid;
};

CaptionData read_caption_data(const DataConfig& d) {
  const std::string root = d.image_root.empty() ? fs::path(d.captions).parent_path().string() : d.image_root;
  const data::CaptionCorpus corpus = data::read_caption_corpus(d.captions, root.empty() ? "." : root);
  return {split_images(corpus, {"train", "restval"}, d.captions), split_images(corpus, {"val"}, d.captions)};
}

std::vector<std::string> all_captions(const SplitImages& s) {
  std::vector<std::string> out;
  for (const auto& c : s.captions) out.insert(out.end(), c.begin(), c.end());
  return out;
}

class CaptionTask : public TrainingTask {
public:
  CaptionTask(const TrainConfig& config, bool resume, const PrintFn& print)
      : cfg_(config),
        data_(read_caption_data(config.data)),
        vocab_(caption_vocab(config, all_captions(data_.train), resume, print)) {
    prepare(print);
  }

  models::ModelConfig model_config(const models::ModelConfig& config) const override {
    models::ModelConfig c = config;
    c.src_vocab = 0;
    c.tgt_vocab = vocab_.size();
    c.specials = vocab_.specials();
    models::validate(c);
    return c;
  }
  std::vector<std::vector<int64_t>> plan_epoch(uint64_t epoch) const override { return batcher_->plan_epoch(epoch); }
  data::Seq2SeqBatch make_batch(const std::vector<int64_t>& indices) const override {
    return with_images(batcher_->make_batch(indices), *train_images_);
  }
  int64_t target_tokens(const std::vector<int64_t>& indices) const override {
    return batcher_->target_tokens(indices);
  }
  Validation validate(models::Seq2SeqModel& model) const override;
  std::string describe() const override;

private:
  void prepare(const PrintFn& print);  // examples, image caches, batchers
  // the cells of the model's grid (the attention's keys per image)
  int64_t cells() const {
    const models::ImageShape s = models::image_shape(cfg_.model);
    return s.grid_h * s.grid_w;
  }
  // b with src = each image its source ids name once [U, 3, S, S], src_rows [B]
  // the image of each caption, src_lengths [U] = the grid's cells.
  data::Seq2SeqBatch with_images(data::Seq2SeqBatch b, const image::ImageCache& cache) const;
  double perplexity(const models::Seq2SeqModel& model) const;
  void decode_valid(const models::Seq2SeqModel& model, Validation& v) const;

  TrainConfig cfg_;
  CaptionData data_;
  data::SubwordVocab vocab_;
  std::unique_ptr<image::ImageCache> train_images_, valid_images_;
  data::EncodedCorpus train_examples_, valid_examples_;
  int64_t dropped_ = 0, longest_ = 0;
  std::unique_ptr<data::Batcher> batcher_, valid_batcher_;
  std::vector<std::vector<int64_t>> valid_plan_;
};

void CaptionTask::prepare(const PrintFn& print) {
  const auto t0 = std::chrono::steady_clock::now();
  const int size = int(models::image_shape(cfg_.model).size);
  train_images_ = std::make_unique<image::ImageCache>(data_.train.paths, size);
  valid_images_ = std::make_unique<image::ImageCache>(data_.valid.paths, size);
  char buf[160];
  std::snprintf(buf, sizeof buf, "decoded %zu images at %dx%d in %.1fs", data_.train.paths.size() + data_.valid.paths.size(),
                size, size, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  print(buf);
  train_examples_ = caption_examples(data_.train, vocab_, cfg_.data.max_tgt_tokens, &dropped_);
  if (train_examples_.size() == 0)
    throw std::invalid_argument(cfg_.data.captions + ": no training caption within data.max_tgt_tokens = " +
                                std::to_string(cfg_.data.max_tgt_tokens));
  valid_examples_ = caption_examples(data_.valid, vocab_, int64_t(1) << 30, nullptr);
  for (const auto& t : train_examples_.tgt) longest_ = std::max<int64_t>(longest_, int64_t(t.size()));
  batcher_ = std::make_unique<data::Batcher>(train_examples_, batch_options(cfg_.train, vocab_, true));
  data::BatchOptions vo = batch_options(cfg_.train, vocab_, false);
  int64_t longest_valid = 0;  // the budget grows to the widest image (its captions, padded): every pair counts
  size_t most_captions = 1;
  for (const auto& t : valid_examples_.tgt) longest_valid = std::max<int64_t>(longest_valid, int64_t(t.size()) + 1);
  for (const auto& c : data_.valid.captions) most_captions = std::max(most_captions, c.size());
  vo.max_tokens = std::max<int64_t>(vo.max_tokens, int64_t(most_captions) * longest_valid);
  valid_batcher_ = std::make_unique<data::Batcher>(valid_examples_, vo);
  valid_plan_ = valid_batcher_->plan_epoch(0);
}

data::Seq2SeqBatch CaptionTask::with_images(data::Seq2SeqBatch b, const image::ImageCache& cache) const {
  std::vector<int64_t> slots;  // [U] cache slots, in order of first use
  b.src_rows.clear();
  for (int64_t i = 0; i < b.src.size(0); ++i) {
    const auto slot = int64_t(b.src.data()[i * b.src.size(1)]);
    const auto seen = std::find(slots.begin(), slots.end(), slot);
    b.src_rows.push_back(int64_t(seen - slots.begin()));
    if (seen == slots.end()) slots.push_back(slot);
  }
  b.src = cache.batch(slots, caption_normalization());
  b.src_lengths.assign(slots.size(), cells());
  return b;
}

double CaptionTask::perplexity(const models::Seq2SeqModel& model) const {
  double nll = 0, tokens = 0;
  for (const auto& idx : valid_plan_) {
    const data::Seq2SeqBatch b = with_images(valid_batcher_->make_batch(idx), *valid_images_);
    double n = 0;
    for (const auto& t : b.targets) n += double(t.size()) + 1;
    nll += double(model.loss(b).item()) * n;  // eval mode: the cross-entropy alone
    tokens += n;
  }
  return std::exp(nll / std::max(tokens, 1.0));
}

void CaptionTask::decode_valid(const models::Seq2SeqModel& model, Validation& v) const {
  const TrainOptions& t = cfg_.train;
  const int64_t n = t.valid_bleu_sentences > 0 ? std::min<int64_t>(t.valid_bleu_sentences, valid_images_->size())
                                               : valid_images_->size();
  decode::SearchOptions so;
  so.beam = t.valid_beam;
  so.alignments = false;
  so.max_len_ratio = 0;  // a caption's length does not scale with the grid
  so.max_len_offset = longest_ + 5;
  std::vector<std::string> hyps;
  size_t most_refs = 1;
  for (int64_t i0 = 0; i0 < n; i0 += t.valid_batch_sentences) {
    std::vector<int64_t> slots;
    for (int64_t i = i0; i < std::min(n, i0 + t.valid_batch_sentences); ++i) slots.push_back(i);
    const Tensor images = valid_images_->batch(slots, caption_normalization());
    const std::vector<int64_t> cells(slots.size(), this->cells());
    for (const decode::SearchResult& r : decode::search(model, images, cells, so))
      hyps.push_back(r.hypotheses.empty() ? "" : vocab_.decode(r.hypotheses[0].tokens));
  }
  int64_t exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto& refs = data_.valid.captions[size_t(i)];
    most_refs = std::max(most_refs, refs.size());
    exact += std::find(refs.begin(), refs.end(), hyps[size_t(i)]) != refs.end();
  }
  // BLEU's reference streams: stream k holds every image's k-th caption (an image
  // with fewer repeats its first, which changes neither clipping nor the closest length)
  std::vector<std::vector<std::string>> streams(most_refs);
  for (size_t k = 0; k < most_refs; ++k)
    for (int64_t i = 0; i < n; ++i) {
      const auto& refs = data_.valid.captions[size_t(i)];
      streams[k].push_back(k < refs.size() ? refs[k] : refs[0]);
    }
  v.bleu = eval::corpus_bleu(hyps, streams).score;
  v.sentences = n;
  v.exact_match = n > 0 ? 100.0 * double(exact) / double(n) : 0.0;
}

Validation CaptionTask::validate(models::Seq2SeqModel& model) const {
  const auto t0 = std::chrono::steady_clock::now();
  model.train(false);
  Validation v;
  {
    NoGradGuard ng;
    v.perplexity = perplexity(model);
    decode_valid(model, v);
  }
  model.train(true);
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

std::string CaptionTask::describe() const {
  char buf[300];
  std::snprintf(buf, sizeof buf, "vocab %d | train %lld captions of %zu images (%lld dropped: long) | valid %zu images",
                vocab_.size(), (long long)train_examples_.size(), data_.train.paths.size(), (long long)dropped_,
                data_.valid.paths.size());
  return buf;
}

}  // namespace

std::unique_ptr<TrainingTask> make_caption_task(const TrainConfig& config, bool resume, const PrintFn& print) {
  return std::make_unique<CaptionTask>(config, resume, print);
}

}  // namespace attn::train
