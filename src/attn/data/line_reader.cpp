#include "attn/data/line_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "attn/data/utf8.h"
#include "attn/tensor/safetensors.h"

namespace attn::data {

namespace {

constexpr size_t kChunk = size_t(1) << 16;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Cuts a byte stream into checked lines (the rules of line_reader.h). Each
// piece of a line is checked for NUL as it arrives and kept only up to the
// limit, so neither a binary file nor one endless line is held before the
// error (or the cut).
class LineSplitter {
public:
  LineSplitter(const std::string& name, const LineLimit& limit) : name_(name), limit_(limit) {}

  void feed(const char* p, size_t n) {
    const char* end = p + n;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
      append(p, nl ? nl : end);
      if (!nl) return;
      finish_line();
      p = nl + 1;
    }
  }
  std::vector<std::string> finish() {
    if (!line_.empty() || over_) finish_line();
    return std::move(lines_);
  }

private:
  std::string where() const { return name_ + ":" + std::to_string(lines_.size() + 1) + ": "; }

  // Bytes [p, end) of the current line (no '\n' among them).
  void append(const char* p, const char* end) {
    const size_t n = size_t(end - p);
    const void* nul = std::memchr(p, '\0', n);
    if (nul)  // text never holds NUL: a binary file, or UTF-16
      throw std::invalid_argument(where() + "NUL byte at byte " +
                                  std::to_string(seen_ + size_t(static_cast<const char*>(nul) - p)) +
                                  " (not a text file?)");
    seen_ += n;
    // one byte over the limit is kept: it may be the '\r' of a CRLF line of exactly max_bytes
    const size_t room = limit_.max_bytes + 1 - std::min(line_.size(), limit_.max_bytes + 1);
    line_.append(p, std::min(n, room));
    if (seen_ <= limit_.max_bytes + 1) return;
    if (!limit_.cut)
      throw std::invalid_argument(where() + "line over " + std::to_string(limit_.max_bytes) +
                                  " bytes (not one sentence per line?)");
    over_ = true;
  }

  void finish_line() {
    if (!line_.empty() && line_.back() == '\r' && !over_) line_.pop_back();
    if (line_.size() > limit_.max_bytes) {
      if (!limit_.cut)
        throw std::invalid_argument(where() + "line over " + std::to_string(limit_.max_bytes) +
                                    " bytes (not one sentence per line?)");
      over_ = true;
    }
    if (over_) cut_at_character(limit_.max_bytes);
    const size_t bad = find_invalid_utf8(line_);
    if (bad != std::string::npos) throw std::invalid_argument(where() + "invalid UTF-8 at byte " + std::to_string(bad));
    if (over_) limit_.cut->push_back(lines_.size());
    lines_.push_back(std::move(line_));
    line_.clear();
    seen_ = 0;
    over_ = false;
  }

  // Keeps at most n bytes, less a UTF-8 character the cut would split.
  void cut_at_character(size_t n) {
    if (line_.size() <= n) return;
    size_t keep = n;
    while (keep > 0 && (static_cast<unsigned char>(line_[keep]) & 0xC0) == 0x80) --keep;  // line_[keep] continues one
    line_.resize(keep);
  }

  const std::string& name_;
  const LineLimit& limit_;
  std::vector<std::string> lines_;
  std::string line_;
  size_t seen_ = 0;    // bytes of the current line so far (kept or not)
  bool over_ = false;  // the current line went past the limit (cut mode)
};

// Reads up to n bytes (fewer only at the end of the file); throws naming the file on a read error.
size_t read_some(std::FILE* f, char* buf, size_t n, const std::string& name) {
  const size_t got = std::fread(buf, 1, n, f);
  if (got < n && std::ferror(f)) throw std::runtime_error("read_lines: cannot read '" + name + "': " + std::strerror(errno));
  return got;
}

bool gzip_magic(const char* p, size_t n) { return n >= 2 && uint8_t(p[0]) == 0x1f && uint8_t(p[1]) == 0x8b; }

// Inflates the gzip members of `f` (the first `have` bytes already in `in`)
// into `out`. Concatenated members are one stream (as gzip -d reads them);
// anything else after the last member, a cut stream or corrupt data throws.
void inflate_gzip(std::FILE* f, std::vector<char>& in, size_t have, const std::string& name, LineSplitter& out) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw std::runtime_error("read_lines: zlib failed to start");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  std::vector<char> buf(kChunk);
  uint64_t consumed = 0;  // compressed bytes before z.next_in
  z.next_in = reinterpret_cast<Bytef*>(in.data());
  z.avail_in = unsigned(have);
  while (true) {
    if (z.avail_in == 0) {
      z.avail_in = unsigned(read_some(f, in.data(), in.size(), name));
      z.next_in = reinterpret_cast<Bytef*>(in.data());
      if (z.avail_in == 0) throw std::runtime_error("read_lines: cannot read '" + name + "': gzip data cut short (unexpected end of file)");
    }
    const unsigned before = z.avail_in;
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = unsigned(buf.size());
    const int rc = inflate(&z, Z_NO_FLUSH);
    consumed += before - z.avail_in;
    out.feed(buf.data(), buf.size() - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in < 2) {  // bring the next two bytes into view: another member's magic, or the end
        std::memmove(in.data(), z.next_in, z.avail_in);
        z.avail_in += unsigned(read_some(f, in.data() + z.avail_in, in.size() - z.avail_in, name));
        z.next_in = reinterpret_cast<Bytef*>(in.data());
        if (z.avail_in == 0) return;  // the end of the last member is the end of the file
      }
      if (!gzip_magic(reinterpret_cast<const char*>(z.next_in), z.avail_in))
        throw std::invalid_argument("read_lines: '" + name + "': trailing garbage after the gzip data at byte " +
                                    std::to_string(consumed));
      inflateReset(&z);
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      throw std::runtime_error("read_lines: cannot read '" + name + "': corrupt gzip data" +
                               (z.msg ? std::string(" (") + z.msg + ")" : std::string()));
    }
  }
}

}  // namespace

std::vector<std::string> read_lines(std::FILE* f, const std::string& name, const LineLimit& limit) {
  LineSplitter lines(name, limit);
  std::vector<char> in(kChunk);
  size_t have = read_some(f, in.data(), in.size(), name);
  if (gzip_magic(in.data(), have)) {
    inflate_gzip(f, in, have, name, lines);
  } else {
    while (have > 0) {
      lines.feed(in.data(), have);
      have = read_some(f, in.data(), in.size(), name);
    }
  }
  return lines.finish();
}

std::vector<std::string> read_lines(const std::string& path, const LineLimit& limit) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw std::runtime_error("read_lines: cannot open '" + path + "': " + std::strerror(errno));
  return read_lines(f.get(), path, limit);
}

void write_lines(const std::string& path, const std::vector<std::string>& lines, bool gzip) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  if (!gzip) return write_file_atomic(path, text);
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("write_lines: zlib failed to start");
  std::string out(deflateBound(&z, uLong(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(text.data());
  z.avail_in = uInt(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("write_lines: '" + path + "': gzip compression failed");
  write_file_atomic(path, out);
}

}  // namespace attn::data
