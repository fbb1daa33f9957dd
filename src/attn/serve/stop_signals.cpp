#include "attn/serve/stop_signals.h"

#include <csignal>
#include <ctime>
#include <stdexcept>

namespace attn::serve {
namespace {

sigset_t stop_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  return s;
}

}  // namespace

StopSignals::StopSignals() {
  const sigset_t s = stop_set();
  if (pthread_sigmask(SIG_BLOCK, &s, nullptr) != 0) throw std::runtime_error("serve: cannot block SIGTERM / SIGINT");
}

StopSignals::~StopSignals() { stop_watching(); }

void StopSignals::stop_watching() {
  done_ = true;
  if (watcher_.joinable()) watcher_.join();
}

void StopSignals::watch(std::function<void(int)> on_signal) {
  watcher_ = std::thread([this, on_signal = std::move(on_signal)] {
    const sigset_t s = stop_set();
    const timespec tick{0, 100 * 1000 * 1000};  // look at done_ ten times a second
    while (!done_) {
      const int sig = sigtimedwait(&s, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        on_signal(sig);
        return;
      }
    }
  });
}

}  // namespace attn::serve
