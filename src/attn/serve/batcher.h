// The micro-batcher: requests from many connections wait in one bounded queue
// and ONE worker thread decodes them, several requests' sentences (or
// uploaded images, for an image model) together.
//
//   - A batch starts with the request at the front of the queue and takes, in
//     queue order, the waiting requests with the same BatchKey (beam size,
//     alignments and their attention map, text or image), each with as many of its waiting sentences
//     as fit: a batch never holds more than max_batch sentences. An image
//     counts as one sentence.
//   - A request of more sentences than a batch takes is decoded in turns: after
//     each batch, its remaining sentences go to the back of the queue, behind
//     every request that arrived meanwhile. So a request waits for at most one
//     batch of each request ahead of it, never for all of a long one's
//     sentences (a 256-sentence request at beam 16 held a 3-word greedy one
//     for 57 s). Its answer goes out when its last batch is decoded; if a batch
//     throws, the request gets the exception and its remaining sentences are
//     dropped.
//   - It closes when the compatible waiting sentences reach max_batch, or
//     max_wait after its first request arrived (a bounded wait), or at stop().
//   - An explain request runs alone, in its turn.
//   - The queue holds at most `capacity` sentences (an explain request counts
//     one); a request that does not fit is refused at once (QueueFull), never
//     queued without bound.
//   - The worker thread owns the compute threads: it sets the OpenMP / BLAS
//     thread count for itself, and every decode runs on it.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "attn/decode/captioner.h"
#include "attn/decode/translator.h"
#include "attn/serve/options.h"

namespace attn::serve {

// Requests decode together only when their keys are equal.
struct BatchKey {
  int beam = 1;
  bool alignments = false;
  bool image = false;  // a caption request (pixels), else a translation (texts)
  std::string attention_map;  // the map of the alignments (a caption's attention), resolved: never ""
  bool operator==(const BatchKey&) const = default;
};

// One batch's translations, in the order of `texts` (run on the worker thread).
using TranslateBatch =
    std::function<std::vector<decode::Translation>(const std::vector<std::string>& texts, const BatchKey& key)>;

// One batch's captions, in the order of the images of pixels [B, 3, H, W]
// (run on the worker thread).
using CaptionBatch = std::function<std::vector<decode::PieceCaption>(const Tensor& pixels, const BatchKey& key)>;

// The queue cannot take a request (full, or the batcher is stopping): 503.
class QueueFull : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct BatcherOptions {
  int64_t max_batch = 32;                   // sentences
  std::chrono::microseconds max_wait{5000};  // from a batch's first request
  int64_t capacity = 256;                   // sentences waiting
  int threads = 2;                          // compute threads of the worker
};

class MicroBatcher {
public:
  // on_batch(sentences) is called on the worker thread after every decoded batch, before its answers go out (metrics).
  // `caption` may be empty (a text model: no caption request is submitted).
  MicroBatcher(BatcherOptions options, TranslateBatch translate, CaptionBatch caption, ExplainFunction explain,
               std::function<void(int64_t)> on_batch = {});
  ~MicroBatcher();  // stop()
  MicroBatcher(const MicroBatcher&) = delete;
  MicroBatcher& operator=(const MicroBatcher&) = delete;

  // Throw QueueFull when the request does not fit. The future holds the
  // result, or the exception the decoding threw.
  std::future<std::vector<decode::Translation>> submit_translate(std::vector<std::string> texts, BatchKey key);
  // pixels [1, 3, H, W]: one uploaded image, decoded and normalised
  // (its captions' attention: attention_map, a name of the model's maps)
  std::future<decode::PieceCaption> submit_caption(Tensor pixels, int beam, std::string attention_map);
  // pixels: undefined for a sentence, [1, 3, H, W] for an image (ExplainFunction)
  std::future<nlohmann::json> submit_explain(nlohmann::json request, Tensor pixels = {});

  int64_t queued_sentences() const;  // waiting, not yet taken by the worker
  int64_t capacity() const { return options_.capacity; }

  // Refuses new requests, decodes every waiting one, and joins the worker.
  void stop();

private:
  struct Job;
  // sentences [begin, end) of a job in one batch
  struct Slice {
    std::shared_ptr<Job> job;
    int64_t begin, end;
  };
  void enqueue(const std::shared_ptr<Job>& job);
  void work();
  std::vector<Slice> take_batch(std::unique_lock<std::mutex>& lock);
  void requeue(const std::vector<Slice>& batch);  // under mu_, after the batch is decoded
  int64_t compatible_sentences(const BatchKey& key) const;
  void run_translate(const std::vector<Slice>& batch);
  void run_caption(const std::vector<Slice>& batch);
  void run_explain(Job& job);

  BatcherOptions options_;
  TranslateBatch translate_;
  CaptionBatch caption_;
  ExplainFunction explain_;
  std::function<void(int64_t)> on_batch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;  // requests with sentences waiting (one in a batch being decoded is out)
  int64_t queued_ = 0;  // sentences (and images) waiting: not yet taken by a batch
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace attn::serve
