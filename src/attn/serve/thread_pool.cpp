#include "attn/serve/thread_pool.h"

namespace attn::serve {

BoundedThreadPool::BoundedThreadPool(int threads) : max_pending_(size_t(std::max(1, threads))) {
  for (size_t i = 0; i < max_pending_; ++i) threads_.emplace_back([this] { work(); });
}

BoundedThreadPool::~BoundedThreadPool() { shutdown(); }

void BoundedThreadPool::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  has_room_.wait(lock, [&] { return jobs_.size() < max_pending_; });
  jobs_.push_back(std::move(fn));
  has_job_.notify_one();
}

void BoundedThreadPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  has_job_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void BoundedThreadPool::work() {
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      has_job_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
      if (jobs_.empty()) return;  // shut down, nothing left
      fn = std::move(jobs_.front());
      jobs_.pop_front();
      has_room_.notify_one();
    }
    fn();
  }
}

}  // namespace attn::serve
