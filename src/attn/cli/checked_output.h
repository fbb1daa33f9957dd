#pragma once
// Every write checked (issue 14): an output whose write failed (a full disk, a closed pipe)
// must exit non-zero naming the path, not exit 0 with the output lost.
#include <sys/stat.h>
#include <unistd.h>

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

// A whole output file streamed by a command (translate -o, --alignments-out):
// written to "<path>.tmp.<pid>" and renamed into place by commit(), so a failed
// or interrupted run never leaves a half-written file under the real name; the
// destructor removes the temporary file of an uncommitted one. A path that
// exists and is not a regular file (/dev/stdout, a FIFO) is written in place.
class OutputFile {
public:
  OutputFile() = default;
  explicit OutputFile(const std::string& path) : path_(path) {
    struct stat st {};
    const bool in_place = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
    tmp_ = in_place ? path : path + ".tmp." + std::to_string(::getpid());
    file_.open(tmp_, std::ios::binary | std::ios::trunc);
    if (!file_) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() {
    if (file_.is_open()) file_.close();
    if (!committed_ && tmp_ != path_) std::remove(tmp_.c_str());
  }
  bool is_open() const { return file_.is_open(); }
  std::ofstream& stream() { return file_; }
  // Flushes, checks every write (close_checked) and renames the file into place.
  void commit() {
    if (!file_.is_open()) return;
    close_checked(file_, path_);
    if (tmp_ != path_ && std::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw std::runtime_error(path_ + ": cannot move the written file into place: " + std::strerror(errno));
    committed_ = true;
  }

private:
  std::string path_, tmp_;
  std::ofstream file_;
  bool committed_ = false;
};

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
