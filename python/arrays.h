// NumPy arrays <-> attn::Tensor at the module's boundary, without copies.
//
// In: a float32, C-contiguous, aligned numpy.ndarray becomes a Tensor over the
// array's own memory (Tensor::borrow); the array is kept alive while any
// tensor views it. Anything else is refused, naming the function and the
// argument: TypeError for an object that is not an ndarray or not float32,
// ValueError for a non-contiguous or misaligned array. attn's kernels read
// flat rows, so converting silently would hide a copy the caller did not ask for.
// Out: a Tensor becomes an ndarray over the tensor's storage (held by a capsule).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::python {

namespace py = pybind11;

// The array `obj` (argument `name` of `fn`) as a Tensor over its memory; see above.
Tensor borrow_array(const py::handle& obj, const char* fn, const char* name);
// The same, or an undefined Tensor for None.
Tensor borrow_optional(const py::handle& obj, const char* fn, const char* name);

// t as an ndarray of t's shape sharing t's storage (an undefined tensor: None).
py::object to_array(const Tensor& t);

// A row-major float vector as an ndarray of `shape` (copied once, owned by the array).
py::array_t<float> vector_array(std::vector<float> values, std::vector<py::ssize_t> shape);

}  // namespace attn::python
