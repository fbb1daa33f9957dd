// SIGTERM and SIGINT as a request to stop: blocked in every thread (so none
// of them is killed by one), and taken by a watcher thread that calls a
// function instead, e.g. Server::stop. `attn serve` then answers the requests
// in flight and exits 0.
#pragma once
#include <atomic>
#include <functional>
#include <thread>

namespace attn::serve {

class StopSignals {
public:
  // Blocks SIGTERM and SIGINT in the calling thread and so in every thread it
  // starts afterwards: construct it before any other thread exists.
  StopSignals();
  ~StopSignals();  // ends the watcher (the signals stay blocked)
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Starts the watcher: the first SIGTERM or SIGINT calls on_signal(signal number) once.
  void watch(std::function<void(int)> on_signal);
  // Ends the watcher (within 0.1 s): on_signal is not called after this returns.
  void stop_watching();

private:
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace attn::serve
