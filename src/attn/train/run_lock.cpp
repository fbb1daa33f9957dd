#include "attn/train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace attn::train {

namespace {
std::string read_pid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? size_t(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown" : s;
}
}  // namespace

RunLock::RunLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the run directory: " + ec.message());
  const std::string path = dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open the run lock: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    const std::string holder = read_pid(fd_);
    ::close(fd_);
    if (e == EWOULDBLOCK)
      throw std::runtime_error(dir + ": the run directory is in use by another attn train (pid " + holder +
                               "); wait for it to finish or stop it first");
    throw std::runtime_error(path + ": cannot lock: " + std::strerror(e));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    // the lock holds without the pid; only the message of a second writer is poorer
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace attn::train
