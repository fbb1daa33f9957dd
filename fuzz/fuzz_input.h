// Helpers shared by the fuzz targets: the fuzzer's bytes as a file (for the
// readers whose only entry point is a path) and split into parts.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn::fuzz {

// An anonymous in-memory file (memfd) holding `bytes`, opened by its path
// /proc/self/fd/N: the readers open it as they would any file, gzip
// detection included, without touching the disk.
class MemFile {
public:
  explicit MemFile(std::string_view bytes) {
    fd_ = ::memfd_create("attn-fuzz", 0);
    if (fd_ < 0) throw std::logic_error("memfd_create failed");  // not an input's fault: crash loudly
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (w <= 0) throw std::logic_error("write to memfd failed");
      done += size_t(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

// The input cut at every occurrence of `separator` (a byte sequence unlikely
// in real files, listed in the target's dictionary so the fuzzer finds it):
// one input then carries several files or fields.
inline std::vector<std::string_view> split_parts(std::string_view data, std::string_view separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = data.find(separator);
    parts.push_back(data.substr(0, at));
    if (at == std::string_view::npos) return parts;
    data.remove_prefix(at + separator.size());
  }
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace attn::fuzz
