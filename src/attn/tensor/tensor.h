// Tensor: an fp32 n-d array with shared, pooled, contiguous storage.
//
// Storage is always row-major contiguous; the only views are the ones that stay
// contiguous and so cost nothing: reshape (same elements, other shape) and a
// range of the outermost axis (narrow0). Everything else (permute, slicing an
// inner axis) copies, which keeps every kernel a flat loop that vectorises.
//
// A tensor also carries the autograd metadata that libtorch keeps in its
// AutogradMeta: whether it requires a gradient, its accumulated gradient, and
// the graph node that produced it. The tape lives in attn/autograd.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/tensor/shape.h"

namespace attn {

namespace autograd {
struct Node;
}

// A block of floats from the pool; returned to the pool when the last tensor
// viewing it goes away. Or memory owned elsewhere (Tensor::borrow): never
// returned to the pool, `owner` kept alive while a tensor views it.
struct Storage {
  explicit Storage(int64_t numel);
  Storage(float* external, int64_t numel, std::shared_ptr<const void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  float* data;
  int64_t numel;
  std::shared_ptr<const void> owner;  // set: borrowed memory (not the pool's)
};

struct TensorImpl {
  Shape shape;
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in floats, into storage
  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;            // accumulated d(loss)/d(this), same shape
  std::shared_ptr<autograd::Node> grad_fn;     // producer; null for leaves
  int output_index = 0;                        // which output of grad_fn this is
};

class Tensor {
public:
  Tensor() = default;  // undefined tensor (no storage): defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- creation (all contiguous, fresh storage) ---
  static Tensor empty(const Shape& shape);  // contents undefined
  static Tensor zeros(const Shape& shape);
  static Tensor full(const Shape& shape, float value);
  static Tensor ones(const Shape& shape) { return full(shape, 1.0f); }
  static Tensor from(const std::vector<float>& values, const Shape& shape);
  static Tensor scalar(float value) { return full(Shape{}, value); }
  // A tensor over `shape.numel()` contiguous floats at `data` that the caller
  // owns (a NumPy array, python/): no copy; `owner` is held until the last
  // tensor viewing the memory goes away. Ops never write to their inputs, so
  // read-only memory may be borrowed for an op's input.
  static Tensor borrow(float* data, const Shape& shape, std::shared_ptr<const void> owner);

  // --- shape ---
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  int dim() const { return impl_->shape.rank(); }
  int64_t size(int axis) const { return impl_->shape.at(axis); }
  int64_t numel() const { return impl_->shape.numel(); }

  // --- data (contiguous, numel() floats) ---
  float* data() { return impl_->storage->data + impl_->offset; }
  const float* data() const { return impl_->storage->data + impl_->offset; }
  float item() const;  // the single element of a 1-element tensor
  std::vector<float> to_vector() const;

  // --- non-differentiable helpers (see attn/autograd/ops.h for differentiable ops) ---
  Tensor clone() const;            // deep copy, no autograd history
  void fill_(float value);
  void copy_from(const Tensor& src);  // same numel; copies values in place
  // Same storage, different shape (numel must match). Not recorded on the tape:
  // use attn::reshape for a differentiable reshape.
  Tensor view(const Shape& shape) const;
  // Rows [start, start+length) of axis 0, sharing storage. Not recorded on the tape.
  Tensor narrow0(int64_t start, int64_t length) const;

  // --- autograd metadata ---
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  Tensor& set_requires_grad(bool on = true);
  Tensor grad() const { return impl_->grad ? Tensor(impl_->grad) : Tensor(); }
  void zero_grad() { impl_->grad.reset(); }
  // Same storage, no history: the result is a leaf that does not require grad.
  Tensor detach() const;
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl_->grad_fn; }

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

private:
  std::shared_ptr<TensorImpl> impl_;
};

// Throws std::invalid_argument naming `what` and both shapes when they differ.
void check_same_shape(const Tensor& a, const Tensor& b, const char* what);

// t's shape as text for error messages: "[2, 3]", or "(undefined)".
std::string shape_str(const Tensor& t);

// t itself when defined, else zeros of `shape` (an optional bias, say).
Tensor or_zeros(const Tensor& t, const Shape& shape);

// The float-encoded lengths in `lengths` (every element, in order) as integers,
// each a whole number in [0, max]; otherwise throws std::invalid_argument
// "<fn>: <name>[i] = <value> is not an integer in [0, <max>]".
std::vector<int64_t> lengths_in_range(const char* fn, const char* name, const Tensor& lengths, int64_t max);

}  // namespace attn
