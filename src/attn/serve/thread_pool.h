// The connection threads of the HTTP server: httplib's own pool queues
// accepted connections without bound; this one lets at most `threads`
// connections wait for a thread and otherwise blocks the accept loop, so
// further clients wait in the kernel's listen backlog.
#pragma once
#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attn::serve {

class BoundedThreadPool : public httplib::TaskQueue {
public:
  explicit BoundedThreadPool(int threads);
  ~BoundedThreadPool() override;

  // Blocks while `threads` connections already wait for a thread.
  void enqueue(std::function<void()> fn) override;
  // Runs every queued connection, then joins the threads.
  void shutdown() override;

private:
  void work();

  size_t max_pending_;
  std::mutex mu_;
  std::condition_variable has_job_, has_room_;
  std::deque<std::function<void()>> jobs_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace attn::serve
