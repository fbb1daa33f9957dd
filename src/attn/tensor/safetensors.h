// The safetensors file format: 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}},
// then the raw little-endian data. Readable by the standard safetensors
// readers (Python `safetensors`, Rust crate, ...). attn writes F32, and for a
// quantised model file (`attn quantize`) BF16 or I8: an I8 tensor [rows, ...]
// comes with its per-row scales as the F32 tensor NAME + kScaleSuffix [rows]
// (x = q * scale[row]). Reading gives F32 tensors in every case: BF16 widened,
// I8 multiplied by its scales; the scales are not listed as tensors.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn {

// How save_safetensors stores the tensors: all F32; all BF16 (round to nearest
// even); or I8 for every 2-D tensor (per-row symmetric, s = max|row| / 127) and
// F32 for the others (biases, norms).
enum class WeightFileType { F32, BF16, I8 };
inline constexpr std::string_view kScaleSuffix = ":scale";

struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order
  std::map<std::string, std::string> metadata;
  // The tensor called `name`; throws naming the file and the tensor when absent.
  const Tensor& get(const std::string& name) const;
  bool has(const std::string& name) const;
  std::string path;
};

// Writes atomically: to a temporary file in the same folder, fsync'd, then
// renamed over `path`; a crash or kill leaves either the old file or the new
// one, never half of one. Throws naming the path on an I/O error.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      WeightFileType type = WeightFileType::F32);
// The file's bytes (save_safetensors writes them); std::invalid_argument for a
// name given twice or a non-finite row of an I8 tensor.
std::string encode_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata, WeightFileType type);

// Reads and validates the whole file: header length, JSON, dtype (F32, BF16, I8 with its scales),
// shapes against byte ranges, ranges inside the file, no overlaps or gaps.
// Throws std::runtime_error naming the file and what is wrong.
SafetensorsFile load_safetensors(const std::string& path);

// The same checks on a whole file's bytes already in memory (load_safetensors
// reads the file and calls this; the fuzzer calls it directly). `path` names
// the file in error messages.
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path);

// Replaces the file at `path` atomically with `bytes` (temporary file, fsync, rename).
// A `path` that exists and is not a regular file (/dev/stdout, a FIFO) is written
// in place instead. Throws std::runtime_error "<path>: write failed: <reason>"
// (or "cannot create ...", "cannot rename ...") and leaves no temporary file.
// `durable` false skips both fsyncs (of the file and of its folder): a reader still
// never sees half a file, but a power cut may lose it; for files that are cheap to
// make again (a generated data set's images: the fsyncs cost ~9 ms a file here).
void write_file_atomic(const std::string& path, const std::string& bytes, bool durable = true);

}  // namespace attn
