#include "call.h"

#include "attn/autograd/node.h"

namespace attn::python {

py::object call_with_grad(const char* fn, std::vector<NamedInput>& inputs, const py::object& grad_output,
                          const std::function<Tensor()>& f) {
  if (grad_output.is_none()) {
    Tensor out;
    {
      py::gil_scoped_release nogil;
      NoGradGuard no_tape;  // a forward only: nothing recorded
      out = f();
    }
    return to_array(out);
  }
  Tensor seed = borrow_array(grad_output, fn, "grad_output");
  for (NamedInput& in : inputs)
    if (in.differentiable && in.tensor.defined()) in.tensor.set_requires_grad(true);
  Tensor out;
  {
    py::gil_scoped_release nogil;
    out = f();
    check_same_shape(seed, out, (std::string(fn) + ": grad_output and the result").c_str());
    backward(out, seed);
  }
  py::dict grads;
  for (const NamedInput& in : inputs) {
    if (!in.differentiable || !in.tensor.defined()) continue;
    Tensor g = in.tensor.grad();
    grads[in.name.c_str()] = to_array(g.defined() ? g : Tensor::zeros(in.tensor.shape()));
  }
  return py::make_tuple(to_array(out.detach()), grads);
}

}  // namespace attn::python
