// One call of a differentiable C++ function from Python, with or without its
// backward: the inputs borrowed from NumPy (arrays.h), the work done with the
// GIL released, and for `grad_output` (the upstream gradient d(loss)/d(result),
// of the result's shape) the gradient of every differentiable input, computed
// by attn's tape (autograd/node.h) exactly as a C++ caller's backward() would.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "arrays.h"

namespace attn::python {

struct NamedInput {
  std::string name;     // the Python argument's name: the key of its gradient
  Tensor tensor;        // undefined: an optional argument not given
  bool differentiable;  // false: masks, lengths (no gradient returned)
};

// f() computes the result from the inputs (it captures them). Returns the
// result as an ndarray, or with grad_output the tuple (result, {name: grad})
// over the given differentiable inputs (a gradient the result does not depend
// on is zeros). An input given as several arguments (the same Tensor) has its
// total gradient under each of their names.
py::object call_with_grad(const char* fn, std::vector<NamedInput>& inputs, const py::object& grad_output,
                          const std::function<Tensor()>& f);

}  // namespace attn::python
