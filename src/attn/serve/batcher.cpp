#include "attn/serve/batcher.h"

#include <cstring>

#include "attn/cpu/threading.h"

namespace attn::serve {

struct MicroBatcher::Job {
  bool explain = false;
  BatchKey key;                    // key.image: a caption request
  std::vector<std::string> texts;  // translate
  Tensor pixels;                   // caption: [1, 3, H, W]; explain: the image's, or undefined for a text
  nlohmann::json request;          // explain
  std::promise<std::vector<decode::Translation>> translations;
  std::promise<decode::PieceCaption> caption;
  std::promise<nlohmann::json> explanation;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();
  int64_t taken = 0;                      // sentences handed to batches so far (a translation: texts[0, taken))
  std::vector<decode::Translation> done;  // translate: [texts], filled batch by batch
  bool failed = false;                    // a batch of it threw: the promise holds the exception
  int64_t sentences() const { return explain || key.image ? 1 : int64_t(texts.size()); }
  int64_t waiting() const { return sentences() - taken; }
};

MicroBatcher::MicroBatcher(BatcherOptions options, TranslateBatch translate, CaptionBatch caption,
                           ExplainFunction explain, std::function<void(int64_t)> on_batch)
    : options_(options),
      translate_(std::move(translate)),
      caption_(std::move(caption)),
      explain_(std::move(explain)),
      on_batch_(std::move(on_batch)) {
  if (options_.max_batch < 1) throw std::invalid_argument("serve: --max-batch must be >= 1");
  if (options_.capacity < 1) throw std::invalid_argument("serve: --queue must be >= 1");
  if (options_.max_wait.count() < 0) throw std::invalid_argument("serve: --max-wait-ms must be >= 0");
  worker_ = std::thread([this] { work(); });
}

MicroBatcher::~MicroBatcher() { stop(); }

void MicroBatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

int64_t MicroBatcher::queued_sentences() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void MicroBatcher::enqueue(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw QueueFull("the server is shutting down");
    if (queued_ + job->sentences() > options_.capacity)
      throw QueueFull("queue full: " + std::to_string(queued_) + " of " + std::to_string(options_.capacity) +
                      " sentences waiting, this request has " + std::to_string(job->sentences()));
    queue_.push_back(job);
    queued_ += job->sentences();
  }
  cv_.notify_all();
}

std::future<std::vector<decode::Translation>> MicroBatcher::submit_translate(std::vector<std::string> texts,
                                                                             BatchKey key) {
  auto job = std::make_shared<Job>();
  job->key = key;
  job->texts = std::move(texts);
  job->done.resize(job->texts.size());
  auto f = job->translations.get_future();
  enqueue(job);
  return f;
}

std::future<decode::PieceCaption> MicroBatcher::submit_caption(Tensor pixels, int beam, std::string attention_map) {
  if (!pixels.defined() || pixels.dim() != 4 || pixels.size(0) != 1)
    throw std::invalid_argument("serve: a caption request holds pixels [1, 3, H, W]");
  auto job = std::make_shared<Job>();
  job->key = {beam, false, true, std::move(attention_map)};
  job->pixels = std::move(pixels);
  auto f = job->caption.get_future();
  enqueue(job);
  return f;
}

std::future<nlohmann::json> MicroBatcher::submit_explain(nlohmann::json request, Tensor pixels) {
  auto job = std::make_shared<Job>();
  job->explain = true;
  job->request = std::move(request);
  job->pixels = std::move(pixels);
  auto f = job->explanation.get_future();
  enqueue(job);
  return f;
}

int64_t MicroBatcher::compatible_sentences(const BatchKey& key) const {
  int64_t n = 0;
  for (const auto& j : queue_)
    if (!j->explain && j->key == key) n += j->waiting();
  return n;
}

std::vector<MicroBatcher::Slice> MicroBatcher::take_batch(std::unique_lock<std::mutex>& lock) {
  const std::shared_ptr<Job> first = queue_.front();
  if (first->explain) {
    queue_.pop_front();
    queued_ -= 1;
    first->taken = 1;
    return {{first, 0, 1}};
  }
  const auto deadline = first->arrived + options_.max_wait;
  while (!stopping_ && compatible_sentences(first->key) < options_.max_batch &&
         std::chrono::steady_clock::now() < deadline)
    cv_.wait_until(lock, deadline);
  // the first request (still at the front: only this thread takes), then the
  // compatible ones in queue order, each giving as many of its waiting
  // sentences as fit in max_batch. Each leaves the queue; one with sentences
  // left goes back at its end once this batch is decoded (requeue).
  std::vector<Slice> batch;
  int64_t n = 0;
  for (auto it = queue_.begin(); it != queue_.end() && n < options_.max_batch;) {
    Job& j = **it;
    if (j.explain || !(j.key == first->key)) {
      ++it;
      continue;
    }
    const int64_t k = std::min(j.waiting(), options_.max_batch - n);
    batch.push_back({*it, j.taken, j.taken + k});
    j.taken += k;
    n += k;
    it = queue_.erase(it);
  }
  queued_ -= n;
  return batch;
}

void MicroBatcher::requeue(const std::vector<Slice>& batch) {
  for (const Slice& s : batch) {
    Job& j = *s.job;
    if (j.waiting() == 0) continue;
    if (j.failed) {  // its answer is the exception already: the rest is not decoded
      queued_ -= j.waiting();
      j.taken = j.sentences();
      continue;
    }
    queue_.push_back(s.job);  // behind every request that arrived meanwhile
  }
}

void MicroBatcher::work() {
  set_num_threads(options_.threads);  // this thread's OpenMP team and the BLAS
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and every request answered
    std::vector<Slice> batch = take_batch(lock);
    lock.unlock();
    if (batch.front().job->explain)
      run_explain(*batch.front().job);
    else if (batch.front().job->key.image)
      run_caption(batch);
    else
      run_translate(batch);
    lock.lock();
    requeue(batch);
  }
}

void MicroBatcher::run_translate(const std::vector<Slice>& batch) {
  std::vector<std::string> texts;
  for (const Slice& s : batch) texts.insert(texts.end(), s.job->texts.begin() + s.begin, s.job->texts.begin() + s.end);
  try {
    std::vector<decode::Translation> all = translate_(texts, batch.front().job->key);
    if (all.size() != texts.size()) throw std::logic_error("serve: the decoder returned a wrong number of translations");
    auto at = all.begin();
    for (const Slice& s : batch)
      for (int64_t i = s.begin; i < s.end; ++i) s.job->done[size_t(i)] = std::move(*at++);
  } catch (...) {
    for (const Slice& s : batch)
      if (!s.job->failed) s.job->translations.set_exception(std::current_exception());
    for (const Slice& s : batch) s.job->failed = true;
  }
  // recorded before the answers go out: a client that has its answer sees its batch in /metrics
  if (on_batch_) on_batch_(int64_t(texts.size()));
  for (const Slice& s : batch)  // a request whose last sentences were in this batch is answered
    if (!s.job->failed && s.end == s.job->sentences()) s.job->translations.set_value(std::move(s.job->done));
}

// The batch's images stacked into one pixels tensor [B, 3, H, W], captioned in one search.
void MicroBatcher::run_caption(const std::vector<Slice>& slices) {
  std::vector<std::shared_ptr<Job>> batch;  // one image each
  for (const Slice& s : slices) batch.push_back(s.job);
  std::vector<decode::PieceCaption> captions;
  try {
    if (!caption_) throw std::logic_error("serve: no caption function (a text model)");
    const Tensor& first = batch.front()->pixels;
    const int64_t per_image = first.numel();
    Tensor pixels = Tensor::empty({int64_t(batch.size()), first.size(1), first.size(2), first.size(3)});
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i]->pixels.shape() != first.shape()) throw std::logic_error("serve: images of different sizes in a batch");
      std::memcpy(pixels.data() + int64_t(i) * per_image, batch[i]->pixels.data(), size_t(per_image) * sizeof(float));
    }
    captions = caption_(pixels, batch.front()->key);
    if (captions.size() != batch.size()) throw std::logic_error("serve: the captioner returned a wrong number of captions");
  } catch (...) {
    for (const auto& j : batch) j->caption.set_exception(std::current_exception());
    captions.clear();
  }
  if (on_batch_) on_batch_(int64_t(batch.size()));
  for (size_t i = 0; i < captions.size(); ++i) batch[i]->caption.set_value(std::move(captions[i]));
}

void MicroBatcher::run_explain(Job& job) {
  try {
    if (!explain_) throw std::logic_error("serve: no explain function");
    job.explanation.set_value(explain_(job.request, job.pixels));
  } catch (...) {
    job.explanation.set_exception(std::current_exception());
  }
}

}  // namespace attn::serve
