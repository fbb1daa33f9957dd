#include "arrays.h"

#include <string>

namespace attn::python {

namespace {

// Holds a Python object for a borrowed tensor's storage. The last tensor may go
// away on a thread without the GIL (a call that released it), so the reference
// is dropped under the GIL.
std::shared_ptr<const void> keep_alive(const py::handle& obj) {
  PyObject* raw = obj.ptr();
  Py_INCREF(raw);
  return std::shared_ptr<const void>(raw, [](const void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
  });
}

std::string where(const char* fn, const char* name) { return std::string(fn) + ": " + name; }

}  // namespace

Tensor borrow_array(const py::handle& obj, const char* fn, const char* name) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(where(fn, name) + " must be a numpy.ndarray of float32, not " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  auto arr = py::reinterpret_borrow<py::array>(obj);
  if (!arr.dtype().is(py::dtype::of<float>()))
    throw py::type_error(where(fn, name) + " must be float32, not " + std::string(py::str(arr.dtype())) +
                         " (convert with .astype(numpy.float32))");
  const int flags = arr.flags();
  if (!(flags & py::array::c_style))
    throw py::value_error(where(fn, name) + " must be C-contiguous (numpy.ascontiguousarray makes a copy that is)");
  if (!(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw py::value_error(where(fn, name) + " must be aligned to 4 bytes");
  if (arr.ndim() > kMaxRank)
    throw py::value_error(where(fn, name) + " has " + std::to_string(arr.ndim()) + " axes (at most " +
                          std::to_string(kMaxRank) + ")");
  std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
  // const_cast: ops never write to their inputs (tensor.h, Tensor::borrow)
  auto* data = static_cast<float*>(const_cast<void*>(arr.data()));
  return Tensor::borrow(data, Shape(dims.begin(), dims.end()), keep_alive(obj));
}

Tensor borrow_optional(const py::handle& obj, const char* fn, const char* name) {
  return obj.is_none() ? Tensor() : borrow_array(obj, fn, name);
}

py::object to_array(const Tensor& t) {
  if (!t.defined()) return py::none();
  auto* owner = new std::shared_ptr<TensorImpl>(t.impl_ptr());
  py::capsule capsule(owner, [](void* p) { delete static_cast<std::shared_ptr<TensorImpl>*>(p); });
  std::vector<py::ssize_t> shape;
  for (int i = 0; i < t.dim(); ++i) shape.push_back(t.size(i));
  return py::array_t<float>(shape, const_cast<float*>(t.data()), capsule);
}

py::array_t<float> vector_array(std::vector<float> values, std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<float>(std::move(values));
  py::capsule capsule(owner, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return py::array_t<float>(shape, owner->data(), capsule);
}

}  // namespace attn::python
