#include "attn/data/line_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "attn/data/utf8.h"

namespace attn::data {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Moves the finished line into `lines` after checking it.
void finish_line(std::string& line, const std::string& path, std::vector<std::string>& lines) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t bad = find_invalid_utf8(line);
  if (bad != std::string::npos)
    throw std::invalid_argument(path + ":" + std::to_string(lines.size() + 1) + ": invalid UTF-8 at byte " +
                                std::to_string(bad));
  lines.push_back(std::move(line));
  line.clear();
}

}  // namespace

std::vector<std::string> read_lines(const std::string& path) {
  // gzopen reads uncompressed files unchanged ("transparent" mode), so one
  // code path serves both.
  GzHandle f(gzopen(path.c_str(), "rb"));
  if (!f) throw std::runtime_error("read_lines: cannot open '" + path + "': " + std::strerror(errno));
  gzbuffer(f.get(), 1 << 17);

  std::vector<std::string> lines;
  std::string line;
  std::vector<char> buf(1 << 16);
  while (true) {
    const int n = gzread(f.get(), buf.data(), unsigned(buf.size()));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(f.get(), &code);
      throw std::runtime_error("read_lines: cannot read '" + path + "': " + msg);
    }
    if (n == 0) {
      // zlib reports a truncated gzip stream only through gzerror (Z_BUF_ERROR).
      int code = Z_OK;
      const char* msg = gzerror(f.get(), &code);
      if (code != Z_OK) throw std::runtime_error("read_lines: cannot read '" + path + "': " + msg);
      break;
    }
    const char* p = buf.data();
    const char* end = p + n;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
      if (!nl) {
        line.append(p, end);
        break;
      }
      line.append(p, nl);
      finish_line(line, path, lines);
      p = nl + 1;
    }
  }
  if (!line.empty()) finish_line(line, path, lines);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines, bool gzip) {
  GzHandle f(gzopen(path.c_str(), gzip ? "wb6" : "wbT"));  // "T": write without compression
  if (!f) throw std::runtime_error("write_lines: cannot open '" + path + "': " + std::strerror(errno));
  for (const std::string& l : lines) {
    if ((!l.empty() && gzwrite(f.get(), l.data(), unsigned(l.size())) == 0) || gzputc(f.get(), '\n') < 0)
      throw std::runtime_error("write_lines: cannot write '" + path + "'");
  }
  if (gzclose(f.release()) != Z_OK) throw std::runtime_error("write_lines: cannot close '" + path + "'");
}

}  // namespace attn::data
