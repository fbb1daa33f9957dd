#include "attn/tensor/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/config/object_reader.h"  // whole_number, describe
#include "attn/kernels/quant_gemm.h"       // bf16_of, float_of_bf16

namespace attn {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

// Limits on what a file may claim, checked before anything is allocated from
// it: a hostile header must not make us allocate or loop without bound.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the reference readers' limit
constexpr size_t kMaxTensors = 100000;

// The byte size of a tensor of `shape` with elements of `element_bytes`, or an
// error naming the tensor when the element count times that does not fit in 64 bits.
uint64_t checked_bytes(const std::string& path, const std::string& name, const Shape& shape, uint64_t element_bytes) {
  uint64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, uint64_t(d), &n))
      fail(path, "tensor '" + name + "': shape " + shape.str() + " has more elements than fit in 64 bits");
  if (n > uint64_t(INT64_MAX) || __builtin_mul_overflow(n, element_bytes, &n))
    fail(path, "tensor '" + name + "': shape " + shape.str() + " is too large (its byte size overflows)");
  return n;
}

// The dtypes read: F32 as is, BF16 widened, I8 times its rows' scales (kScaleSuffix)
uint64_t element_bytes(const std::string& dtype) { return dtype == "F32" ? 4 : dtype == "BF16" ? 2 : 1; }



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
                      const std::map<std::string, std::string>& metadata, WeightFileType type) {
  std::string bytes;
  try {
    bytes = encode_safetensors(tensors, metadata, type);
  } catch (const std::invalid_argument& e) {
    fail(path, e.what());
  }
  write_file_atomic(path, bytes);
}

namespace {

struct Entry {
  std::string name, dtype;
  Shape shape;
  uint64_t begin, end;
};

// An entry's data as F32: as stored, widened from BF16, or I8 times the scale of
// its first index (the entry NAME + kScaleSuffix: F32 [shape[0]])
Tensor decode_tensor(const std::string& path, const Entry& e, std::string_view data,
                     const std::map<std::string, const Entry*>& by_name) {
  Tensor t = Tensor::empty(e.shape);
  const char* src = data.data() + e.begin;
  const int64_t n = t.numel();
  if (e.dtype == "F32") {
    std::memcpy(t.data(), src, e.end - e.begin);
  } else if (e.dtype == "BF16") {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      t.data()[i] = quant::kernels::float_of_bf16(h);
    }
  } else {
    auto s = by_name.find(e.name + std::string(kScaleSuffix));
    const int64_t rows = e.shape.rank() == 0 ? 1 : e.shape[0];
    if (s == by_name.end() || s->second->dtype != "F32" || s->second->shape != Shape{rows})
      fail(path, "tensor '" + e.name + "': I8 without its scales '" + e.name + std::string(kScaleSuffix) + "' (F32 [" +
                     std::to_string(rows) + "])");
    std::vector<float> scale(static_cast<size_t>(rows));
    std::memcpy(scale.data(), data.data() + s->second->begin, size_t(rows) * 4);
    const int64_t per_row = rows ? n / rows : 0;
    for (int64_t i = 0; i < n; ++i) t.data()[i] = float(int8_t(src[i])) * scale[size_t(i / per_row)];
  }
  return t;
}

}  // namespace

std::string encode_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata, WeightFileType type) {
  static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");
  // each tensor's stored form: (name, dtype, bytes)
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>, std::string>> stored;
  for (const auto& [name, t] : tensors) {
    std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
    const float* x = t.data();
    const int64_t n = t.numel();
    if (type == WeightFileType::BF16) {
      std::string b(size_t(n) * 2, '\0');
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = quant::kernels::bf16_of(x[i]);
        std::memcpy(b.data() + 2 * i, &h, 2);
      }
      stored.emplace_back(name, "BF16", shape, std::move(b));
    } else if (type == WeightFileType::I8 && t.dim() == 2 && n > 0) {
      // per row, symmetric: q = round(x / s), s = max|row| / 127 (nn/step_weight_types.cpp's scheme)
      const int64_t rows = t.size(0), cols = t.size(1);
      std::string q(size_t(n), '\0'), sc(size_t(rows) * 4, '\0');
      for (int64_t r = 0; r < rows; ++r) {
        float amax = 0;
        for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
        if (!std::isfinite(amax))
          throw std::invalid_argument("int8 weights: tensor '" + name + "' row " + std::to_string(r) + " is not finite");
        const float inv = amax > 0 ? 127.0f / amax : 0.0f, s = amax / 127.0f;
        for (int64_t c = 0; c < cols; ++c) q[size_t(r * cols + c)] = char(int8_t(std::nearbyint(x[r * cols + c] * inv)));
        std::memcpy(sc.data() + 4 * r, &s, 4);
      }
      stored.emplace_back(name, "I8", shape, std::move(q));
      stored.emplace_back(name + std::string(kScaleSuffix), "F32", std::vector<int64_t>{rows}, std::move(sc));
    } else {
      stored.emplace_back(name, "F32", shape, std::string(reinterpret_cast<const char*>(x), size_t(n) * 4));
    }
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, dtype, shape, bytes] : stored) {
    if (header.contains(name)) throw std::invalid_argument("tensor name '" + name + "' appears twice");
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {offset, offset + bytes.size()}}};
    offset += bytes.size();
  }
  std::string h = header.dump();
  while (h.size() % 8) h.push_back(' ');  // the format pads the header with spaces to 8 bytes
  std::string out;
  out.reserve(8 + h.size() + offset);
  uint64_t hn = h.size();
  out.append(reinterpret_cast<const char*>(&hn), 8);
  out += h;
  for (const auto& st : stored) out += std::get<3>(st);
  return out;
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
    if (e["dtype"] != "F32" && e["dtype"] != "BF16" && e["dtype"] != "I8")  // only a string is quoted (describe)
      fail(path, "tensor '" + name + "': dtype " +
                     (e["dtype"].is_string() ? config::describe(e["dtype"]) : std::string("not a string")) +
                     ", only F32, BF16 and I8 are supported");
    Entry en;
    en.name = name;
    en.dtype = e["dtype"].get<std::string>();
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
    if (en.end < en.begin || en.end - en.begin != checked_bytes(path, name, en.shape, element_bytes(en.dtype)))
      fail(path, "tensor '" + name + "': byte range [" + std::to_string(en.begin) + ", " + std::to_string(en.end) +
                     ") does not hold shape " + en.shape.str() + " of " + en.dtype);
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
  std::map<std::string, const Entry*> by_name;
  for (const Entry& e : entries) by_name[e.name] = &e;
  for (const Entry* e : sorted) {
    const bool is_scale = e->name.size() > kScaleSuffix.size() &&
                          e->name.compare(e->name.size() - kScaleSuffix.size(), kScaleSuffix.size(), kScaleSuffix) == 0;
    if (is_scale) {  // read with its I8 tensor
      auto base = by_name.find(e->name.substr(0, e->name.size() - kScaleSuffix.size()));
      if (base == by_name.end() || base->second->dtype != "I8")
        fail(path, "tensor '" + e->name + "': the scales of a tensor that is not I8");
      continue;
    }
    f.tensors.emplace_back(e->name, decode_tensor(path, *e, data, by_name));
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
