// An exclusive lock on a run directory (flock on RUN/.lock, which holds the
// holder's pid), so two `attn train` never write one run. The kernel drops
// the lock when the process dies, however it dies.
#pragma once
#include <string>

namespace attn::train {

class RunLock {
public:
  // Creates `dir` if needed and locks it. Throws std::runtime_error naming the
  // directory and the holder's pid when another process holds it.
  explicit RunLock(const std::string& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

private:
  int fd_ = -1;
};

}  // namespace attn::train
