#include "attn/tensor/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/config/object_reader.h"  // whole_number, describe

namespace attn {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

// Limits on what a file may claim, checked before anything is allocated from
// it: a hostile header must not make us allocate or loop without bound.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference readers' limit
constexpr size_t kMaxTensors = 100000;

// The byte size of an F32 tensor of `shape`, or an error naming the tensor
// when the element count times 4 does not fit in 64 bits (it would wrap).
uint64_t checked_f32_bytes(const std::string& path, const std::string& name, const Shape& shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, uint64_t(d), &n))
      fail(path, "tensor '" + name + "': shape " + shape.str() + " has more elements than fit in 64 bits");
  if (n > uint64_t(INT64_MAX) || __builtin_mul_overflow(n, uint64_t(4), &n))
    fail(path, "tensor '" + name + "': shape " + shape.str() + " is too large (its byte size overflows)");
  return n;
}

// The 8-byte header length `hn` of a file of `file_size` bytes: inside the
// file and under the limit, else an error naming the file.
void check_header_length(const std::string& path, uint64_t file_size, uint64_t hn) {
  if (file_size < 8) fail(path, "truncated: " + std::to_string(file_size) + " bytes, less than the 8-byte header length");
  if (hn > file_size - 8)
    fail(path, "truncated or corrupt: header length " + std::to_string(hn) + " exceeds the file (" +
                   std::to_string(file_size) + " bytes)");
  if (hn > kMaxHeaderBytes)
    fail(path, "corrupt: header length " + std::to_string(hn) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
}

void write_all(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) fail(path, std::string("write failed: ") + std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes, bool durable) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // a device or a pipe (/dev/stdout, /dev/full, a FIFO): written in place,
    // never replaced by a regular file
    int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    try {
      write_all(fd, bytes.data(), bytes.size(), path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) fail(path, std::string("write failed: ") + std::strerror(errno));
    return;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail(path, "cannot create the temporary file " + tmp + ": " + std::strerror(errno));
  try {
    write_all(fd, bytes.data(), bytes.size(), path);
    if (durable && ::fsync(fd) != 0) fail(path, std::string("write failed (fsync): ") + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("write failed: ") + std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("cannot rename temporary file into place: ") + std::strerror(e));
  }
  if (!durable) return;
  // make the rename itself durable
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  int dfd = ::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (header.contains(name)) fail(path, "tensor name '" + name + "' appears twice");
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    uint64_t bytes = uint64_t(t.numel()) * 4;
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while (h.size() % 8) h.push_back(' ');  // the format pads the header with spaces to 8 bytes
  std::string out;
  out.reserve(8 + h.size() + offset);
  uint64_t hn = h.size();
  out.append(reinterpret_cast<const char*>(&hn), 8);
  out += h;
  for (const auto& [name, t] : tensors) out.append(reinterpret_cast<const char*>(t.data()), size_t(t.numel()) * 4);
  write_file_atomic(path, out);
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open");
  const auto size = in.tellg();
  if (size < 0) fail(path, "cannot read its size");
  in.seekg(0);
  // The header length is checked before the file is read: a hostile length
  // is refused without reading (or allocating) the whole file first.
  uint64_t hn = 0;
  if (uint64_t(size) >= 8) in.read(reinterpret_cast<char*>(&hn), 8);
  check_header_length(path, uint64_t(size), hn);
  std::string bytes(size_t(size), '\0');  // the file's real size, not a size it claims
  in.seekg(0);
  in.read(bytes.data(), std::streamsize(bytes.size()));
  if (uint64_t(in.gcount()) != bytes.size()) fail(path, "read failed");
  return parse_safetensors(bytes, path);
}

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path) {
  const uint64_t file_size = bytes.size();
  uint64_t hn = 0;
  if (file_size >= 8) std::memcpy(&hn, bytes.data(), 8);
  check_header_length(path, file_size, hn);
  const std::string_view h = bytes.substr(8, hn);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number beyond a double
    fail(path, "corrupt header (not JSON): " + config::parse_error_text(e));
  }
  if (!header.is_object()) fail(path, "corrupt header: not a JSON object");
  if (header.size() > kMaxTensors)
    fail(path, "corrupt: " + std::to_string(header.size()) + " header entries, the limit is " + std::to_string(kMaxTensors));
  uint64_t data_size = file_size - 8 - hn;
  SafetensorsFile f;
  f.path = path;
  struct Entry {
    std::string name;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail(path, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail(path, "__metadata__ value for '" + m.key() + "' is not a string");
        f.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const auto& e = *it;
    const std::string& name = it.key();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      fail(path, "tensor '" + name + "': entry lacks dtype, shape or data_offsets");
    if (e["dtype"] != "F32")  // only a string is quoted (describe: bounded, and no dump() of a nested value)
      fail(path, "tensor '" + name + "': dtype " +
                     (e["dtype"].is_string() ? config::describe(e["dtype"]) : std::string("not a string")) +
                     ", only F32 is supported");
    Entry en;
    en.name = name;
    try {
      if (!e["shape"].is_array()) fail(path, "tensor '" + name + "': shape is not an array");
      if (e["shape"].size() > size_t(kMaxRank))
        fail(path, "tensor '" + name + "': rank " + std::to_string(e["shape"].size()) + " exceeds the limit of " +
                       std::to_string(kMaxRank));
      for (const auto& d : e["shape"]) {
        const auto n = config::whole_number<int64_t>(d);
        if (!n) fail(path, "tensor '" + name + "': shape holds " + config::describe(d) + ", not a whole number");
        en.shape.push_back(*n);
      }
      const auto& off = e["data_offsets"];
      if (!off.is_array() || off.size() != 2) fail(path, "tensor '" + name + "': data_offsets must have 2 entries");
      const auto begin = config::whole_number<uint64_t>(off[0]), end = config::whole_number<uint64_t>(off[1]);
      if (!begin || !end)
        fail(path, "tensor '" + name + "': data_offsets are not whole numbers of 64 bits: " + config::describe(off[0]) + ", " +
                       config::describe(off[1]));
      en.begin = *begin;
      en.end = *end;
    } catch (const nlohmann::json::exception& ex) {
      fail(path, "tensor '" + name + "': malformed shape or data_offsets: " + ex.what());
    } catch (const std::invalid_argument& ex) {
      fail(path, "tensor '" + name + "': " + ex.what());
    }
    if (en.end < en.begin || en.end - en.begin != checked_f32_bytes(path, name, en.shape))
      fail(path, "tensor '" + name + "': byte range [" + std::to_string(en.begin) + ", " + std::to_string(en.end) +
                     ") does not hold shape " + en.shape.str() + " of F32");
    if (en.end > data_size)
      fail(path, "truncated: tensor '" + name + "' ends at byte " + std::to_string(en.end) + " of the data, which has " +
                     std::to_string(data_size));
    entries.push_back(en);
  }
  // The format requires the ranges to tile the data exactly (no holes, no overlap).
  std::vector<const Entry*> sorted;
  for (auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t pos = 0;
  for (const Entry* e : sorted) {
    if (e->begin != pos) fail(path, "corrupt: tensor '" + e->name + "' data does not start where the previous ends");
    pos = e->end;
  }
  if (pos != data_size)
    fail(path, "corrupt: " + std::to_string(data_size - pos) + " bytes after the last tensor's data");
  const std::string_view data = bytes.substr(8 + hn);
  for (const Entry* e : sorted) {
    Tensor t = Tensor::empty(e->shape);
    std::memcpy(t.data(), data.data() + e->begin, e->end - e->begin);
    f.tensors.emplace_back(e->name, t);
  }
  return f;
}

const Tensor& SafetensorsFile::get(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw std::runtime_error(path + ": no tensor named '" + name + "'");
}

bool SafetensorsFile::has(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return true;
  return false;
}

}  // namespace attn
