#pragma once
// Every write checked (issue 14): an output whose write failed (a full disk, a closed pipe)
// must exit non-zero naming the path, not exit 0 with the output lost.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

namespace attn::cli {

// Flushes and closes `file` (opened on `path`); throws "<path>: write failed: <reason>" when
// any write to it failed. Call once, when the command has written everything.
inline void close_checked(std::ofstream& file, const std::string& path) {
  if (!file.is_open()) return;
  file.flush();
  const int flush_errno = errno;
  file.close();
  if (file.fail()) throw std::runtime_error(path + ": write failed: " + std::strerror(flush_errno ? flush_errno : errno));
}

// Flushes std::cout and C's stdout (commands write with both) and returns false (after saying why on stderr) when any write to it failed;
// main() calls it once after every command, so no command can lose its stdout silently.
inline bool stdout_written() {
  errno = 0;
  std::cout.flush();
  const bool cout_ok = std::cout.good();
  const bool stdio_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (cout_ok && stdio_ok) return true;
  std::cerr << "attn: stdout: write failed" << (errno ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
  return false;
}

}  // namespace attn::cli
