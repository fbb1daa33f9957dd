#include "attn/models/decoder_state.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace attn::models {

const Tensor& TensorSet::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::invalid_argument("tensor set: no tensor named '" + name + "'");
  return it->second;
}

DecoderState::DecoderState(int64_t rows, int64_t max_rows) : rows_(rows), max_rows_(max_rows) {
  if (rows < 0 || max_rows < rows)
    throw std::invalid_argument("decoder state: " + std::to_string(rows) + " rows in buffers of " +
                                std::to_string(max_rows));
}

Tensor& DecoderState::add(const std::string& name, const Shape& per_row, int time_axis) {
  if (time_axis >= per_row.rank())
    throw std::invalid_argument("decoder state: '" + name + "' has no axis " + std::to_string(time_axis) +
                                " to be its time axis");
  Shape s{max_rows_};
  for (int i = 0; i < per_row.rank(); ++i) s.push_back(per_row[i]);
  Tensor& t = buffers_[name];
  t = Tensor::zeros(s);
  if (time_axis >= 0) time_axis_[name] = time_axis + 1;
  return t;
}

Tensor& DecoderState::add_unmoved(const std::string& name, int64_t T, const Shape& per_slot) {
  if (T < 1) throw std::invalid_argument("decoder state: '" + name + "' of " + std::to_string(T) + " positions");
  Shape s{T, max_rows_};
  for (int i = 0; i < per_slot.rank(); ++i) s.push_back(per_slot[i]);
  Tensor& t = buffers_[name];
  t = Tensor::empty(s);
  unmoved_.insert(name);
  return t;
}

namespace {

// A buffer shaped [rows, outer..., T, inner...] (time axis `axis`) seen as
// blocks of [T, inner]: the floats of one position, and the blocks per row.
struct TimeLayout {
  int64_t blocks_per_row = 1, inner = 1, T = 0;
};
TimeLayout time_layout(const Tensor& buf, int axis) {
  TimeLayout l;
  for (int i = 1; i < axis; ++i) l.blocks_per_row *= buf.size(i);
  for (int i = axis + 1; i < buf.dim(); ++i) l.inner *= buf.size(i);
  l.T = buf.size(axis);
  return l;
}

// Copies of more floats than this split across the threads: a beam search's
// cache gather moves tens of MB per step (rows x layers x positions x E), and
// one core's copy reaches about half the bandwidth of two; the other thread
// would otherwise spin in OpenMP's wait for the step's next region.
constexpr int64_t kParallelCopyFloats = int64_t(1) << 18;

// The first `filled` positions of `blocks` consecutive blocks, from blocks of
// src_T positions to blocks of dst_T (a growth: dst_T longer).
void copy_time_prefix(const float* src, int64_t src_T, float* dst, int64_t dst_T, int64_t blocks, int64_t inner,
                      int64_t filled) {
  const int64_t n = std::min(filled, std::min(src_T, dst_T)) * inner;
#pragma omp parallel for schedule(static) if (blocks * n >= kParallelCopyFloats)
  for (int64_t b = 0; b < blocks; ++b)
    std::memcpy(dst + b * dst_T * inner, src + b * src_T * inner, size_t(n) * sizeof(float));
}

}  // namespace

void DecoderState::set(const std::string& name, const Tensor& t) {
  if (buffers_.all().empty() && rows_ == 0 && max_rows_ == 0 && t.defined() && t.dim() >= 1)
    rows_ = max_rows_ = t.size(0);
  if (rows_ != max_rows_ || !t.defined() || t.dim() < 1 || t.size(0) != rows_)
    throw std::invalid_argument("decoder state: set('" + name + "', " + shape_str(t) + ") in a state of " +
                                std::to_string(rows_) + " rows (buffers of " + std::to_string(max_rows_) + ")");
  buffers_[name] = t;
}

float* DecoderState::data(const std::string& name) {
  Tensor t = buffers_.get(name);  // shares the buffer's storage
  return t.data();
}

Tensor DecoderState::live(const std::string& name) const {
  const Tensor& t = buffers_.get(name);
  return rows_ == max_rows_ || unmoved_.count(name) ? t : t.narrow0(0, rows_);
}

void DecoderState::gather(const std::vector<int64_t>& from) {
  const int64_t n = int64_t(from.size());
  if (n > max_rows_)
    throw std::invalid_argument("decoder state: gather of " + std::to_string(n) + " rows into buffers of " +
                                std::to_string(max_rows_));
  for (int64_t r : from)
    if (r < 0 || r >= rows_)
      throw std::invalid_argument("decoder state: gather from row " + std::to_string(r) + " of " +
                                  std::to_string(rows_));
  for (const auto& [name, buf] : buffers_.all()) {
    if (unmoved_.count(name)) continue;
    Tensor& spare = spare_[name];
    if (!spare.defined() || spare.shape() != buf.shape()) spare = Tensor::empty(buf.shape());
    const int64_t row = max_rows_ ? buf.numel() / max_rows_ : 0;
    const float* src = buf.data();
    float* dst = spare.data();
    auto axis = time_axis_.find(name);
    if (axis != time_axis_.end() && filled_steps_ >= 0) {  // each row's blocks: their first filled_steps_ positions
      const TimeLayout l = time_layout(buf, axis->second);
      const int64_t blocks = l.blocks_per_row, len = std::min(filled_steps_, l.T) * l.inner;
#pragma omp parallel for collapse(2) schedule(static) if (n * blocks * len >= kParallelCopyFloats)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < blocks; ++b)
          std::memcpy(dst + i * row + b * l.T * l.inner, src + from[size_t(i)] * row + b * l.T * l.inner,
                      size_t(len) * sizeof(float));
      continue;
    }
#pragma omp parallel for schedule(static) if (n * row >= kParallelCopyFloats)
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * row, src + from[size_t(i)] * row, size_t(row) * sizeof(float));
  }
  // swap each buffer with its spare: the tensors keep their storage, no allocation after the first gather
  for (const auto& entry : buffers_.all())
    if (!unmoved_.count(entry.first)) std::swap(buffers_[entry.first], spare_[entry.first]);
  rows_ = n;
}

void DecoderState::grow_time_axes(int64_t len) {
  for (const auto& [name, axis] : time_axis_) {
    Tensor& buf = buffers_[name];
    const TimeLayout l = time_layout(buf, axis);
    if (l.T >= len) continue;
    Shape s = buf.shape();
    s[axis] = len;
    Tensor grown = Tensor::empty(s);
    copy_time_prefix(buf.data(), l.T, grown.data(), len, rows_ * l.blocks_per_row, l.inner,
                     filled_steps_ < 0 ? l.T : filled_steps_);
    buf = grown;  // the spare is re-made at the next gather (its shape differs)
  }
  for (const std::string& name : unmoved_) {  // [T, M, ...]: the filled positions are one prefix
    Tensor& buf = buffers_[name];
    if (buf.size(0) >= len) continue;
    Shape s = buf.shape();
    s[0] = len;
    Tensor grown = Tensor::empty(s);
    const int64_t filled = filled_steps_ < 0 ? buf.size(0) : std::min(filled_steps_, buf.size(0));
    std::memcpy(grown.data(), buf.data(), size_t(filled * (buf.numel() / buf.size(0))) * sizeof(float));
    buf = grown;
  }
}

DecoderState DecoderState::live_view() const {
  DecoderState v(rows_, rows_);
  v.time_axis_ = time_axis_, v.unmoved_ = unmoved_, v.filled_steps_ = filled_steps_;
  for (const auto& [name, buf] : buffers_.all()) v.buffers_[name] = live(name);
  return v;
}

void DecoderState::copy_live_from(const DecoderState& from) {
  if (from.rows_ != rows_ || from.buffers_.all().size() != buffers_.all().size())
    throw std::invalid_argument("decoder state: copy of a state of " + std::to_string(from.rows_) + " rows and " +
                                std::to_string(from.buffers_.all().size()) + " tensors into one of " +
                                std::to_string(rows_) + " and " + std::to_string(buffers_.all().size()));
  for (const auto& [name, t] : from.buffers_.all()) {
    Tensor dst = live(name);
    if (!t.defined() || t.shape() != dst.shape())
      throw std::invalid_argument("decoder state: '" + name + "' is " + shape_str(t) + ", the live rows " +
                                  shape_str(dst));
    if (!t.same(dst)) std::memcpy(dst.data(), t.data(), size_t(t.numel()) * sizeof(float));
  }
}

}  // namespace attn::models
