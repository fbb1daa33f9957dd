#include "attn/tensor/tensor.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "attn/tensor/pool.h"

namespace attn {

Storage::Storage(int64_t n) : data(static_cast<float*>(pool::allocate(size_t(n) * sizeof(float)))), numel(n) {}
Storage::Storage(float* external, int64_t n, std::shared_ptr<const void> owner_)
    : data(external), numel(n), owner(std::move(owner_)) {}
Storage::~Storage() {
  if (!owner) pool::release(data, size_t(numel) * sizeof(float));
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  int r = a.rank() > b.rank() ? a.rank() : b.rank();
  std::vector<int64_t> out(r);
  for (int i = 0; i < r; ++i) {
    int ia = a.rank() - r + i, ib = b.rank() - r + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("cannot broadcast shapes " + a.str() + " and " + b.str());
    out[i] = da == 1 ? db : da;
  }
  return Shape(out.begin(), out.end());
}

static Tensor make(const Shape& shape) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->storage = std::make_shared<Storage>(shape.numel());
  return Tensor(std::move(impl));
}

Tensor Tensor::empty(const Shape& shape) { return make(shape); }

Tensor Tensor::borrow(float* data, const Shape& shape, std::shared_ptr<const void> owner) {
  if (!owner) throw std::invalid_argument("Tensor::borrow: no owner for the memory of shape " + shape.str());
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->storage = std::make_shared<Storage>(data, shape.numel(), std::move(owner));
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape) {
  Tensor t = make(shape);
  std::memset(t.data(), 0, size_t(t.numel()) * sizeof(float));
  return t;
}

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = make(shape);
  t.fill_(value);
  return t;
}

Tensor Tensor::from(const std::vector<float>& values, const Shape& shape) {
  if (int64_t(values.size()) != shape.numel())
    throw std::invalid_argument("Tensor::from: " + std::to_string(values.size()) + " values for shape " + shape.str());
  Tensor t = make(shape);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

float Tensor::item() const {
  if (numel() != 1) throw std::invalid_argument("item(): tensor of shape " + shape().str() + " is not a single element");
  return data()[0];
}

std::vector<float> Tensor::to_vector() const { return std::vector<float>(data(), data() + numel()); }

Tensor Tensor::clone() const {
  Tensor t = make(shape());
  std::memcpy(t.data(), data(), size_t(numel()) * sizeof(float));
  return t;
}

void Tensor::fill_(float value) {
  float* p = data();
  int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.numel() != numel())
    throw std::invalid_argument("copy_from: " + src.shape().str() + " into " + shape().str());
  std::memcpy(data(), src.data(), size_t(numel()) * sizeof(float));
}

Tensor Tensor::view(const Shape& s) const {
  if (s.numel() != numel()) throw std::invalid_argument("view: cannot view " + shape().str() + " as " + s.str());
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = s;
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  return Tensor(std::move(impl));
}

Tensor Tensor::narrow0(int64_t start, int64_t length) const {
  if (dim() == 0 || start < 0 || length < 0 || start + length > shape()[0])
    throw std::invalid_argument("narrow0: rows [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                ") of " + shape().str());
  Shape s = shape();
  s[0] = length;
  int64_t row = shape()[0] ? numel() / shape()[0] : 0;
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = s;
  impl->storage = impl_->storage;
  impl->offset = impl_->offset + start * row;
  return Tensor(std::move(impl));
}

Tensor& Tensor::set_requires_grad(bool on) {
  if (impl_->grad_fn) throw std::invalid_argument("set_requires_grad: only leaf tensors (no grad_fn) can be marked");
  impl_->requires_grad = on;
  return *this;
}

Tensor Tensor::detach() const { return view(shape()); }

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(std::string(what) + ": shapes " + a.shape().str() + " and " + b.shape().str() + " differ");
}

std::string shape_str(const Tensor& t) { return t.defined() ? t.shape().str() : std::string("(undefined)"); }

Tensor or_zeros(const Tensor& t, const Shape& shape) { return t.defined() ? t : Tensor::zeros(shape); }

std::vector<int64_t> lengths_in_range(const char* fn, const char* name, const Tensor& lengths, int64_t max) {
  std::vector<int64_t> out(size_t(lengths.numel()));
  for (int64_t i = 0; i < lengths.numel(); ++i) {
    const float n = lengths.data()[i];
    if (!(n >= 0.0f && n <= float(max)) || n != std::floor(n))
      throw std::invalid_argument(std::string(fn) + ": " + name + "[" + std::to_string(i) + "] = " + std::to_string(n) +
                                  " is not an integer in [0, " + std::to_string(max) + "]");
    out[size_t(i)] = int64_t(n);
  }
  return out;
}

}  // namespace attn
