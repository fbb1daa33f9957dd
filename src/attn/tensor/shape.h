// Shape: the sizes of a tensor's axes, outermost first (row-major, contiguous).
//
// Axis order is stated at every public function as e.g. [batch, src_len, hidden].
// Rank is at most kMaxRank; the engine's layers need 4 (batch, heads, len, dim).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace attn {

constexpr int kMaxRank = 6;

class Shape {
public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    if (dims.size() > kMaxRank) throw std::invalid_argument("Shape: rank > " + std::to_string(kMaxRank));
    for (int64_t d : dims) push_back(d);
  }
  template <class It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  // Axis by index that may be negative (-1 is the last axis); throws when out of range.
  int64_t at(int axis) const { return dims_[normalize_axis(axis)]; }
  int normalize_axis(int axis) const {
    int a = axis < 0 ? axis + rank_ : axis;
    if (a < 0 || a >= rank_) throw std::invalid_argument("axis " + std::to_string(axis) + " out of range for shape " + str());
    return a;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  void push_back(int64_t d) {
    if (rank_ == kMaxRank) throw std::invalid_argument("Shape: rank > " + std::to_string(kMaxRank));
    if (d < 0) throw std::invalid_argument("Shape: negative size " + std::to_string(d));
    dims_[rank_++] = d;
  }
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }
  int64_t back() const { return dims_[rank_ - 1]; }

  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i)
      if (dims_[i] != o.dims_[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
    return s + "]";
  }

private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Numpy broadcasting of two shapes; throws naming both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace attn
