#include "gradcheck.h"

#include <cmath>
#include <unordered_set>

#include "attn/tensor/random.h"
#include "compare.h"

namespace attn::testing {

std::vector<GradcheckCase>& gradcheck_cases() {
  static std::vector<GradcheckCase> cases;
  return cases;
}

namespace {
// L = sum(out * R) in double, R fixed: a non-trivial seed for every output element.
double project(const Tensor& out, const Tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < out.numel(); ++i) s += double(out.data()[i]) * double(r.data()[i]);
  return s;
}

bool tape_has(const Tensor& out, const std::string& name) {
  std::vector<autograd::Node*> stack;
  std::unordered_set<autograd::Node*> seen;
  if (out.grad_fn()) stack.push_back(out.grad_fn().get());
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (n->name == name) return true;
    for (const Tensor& in : n->inputs)
      if (in.defined() && in.grad_fn()) stack.push_back(in.grad_fn().get());
  }
  return false;
}
}  // namespace

GradcheckReport run_gradcheck(const GradcheckCase& c, uint64_t seed) {
  Rng rng(seed);
  std::vector<Tensor> inputs;
  for (const Shape& s : c.input_shapes) inputs.push_back(randn(s, rng));
  if (c.prepare) c.prepare(inputs);
  auto diff = [&](size_t i) { return c.differentiable.empty() || c.differentiable[i]; };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (diff(i)) inputs[i].set_requires_grad(true);

  Tensor out = c.f(inputs);
  GradcheckReport rep;
  rep.op_on_tape = tape_has(out, c.op);
  Tensor r = randn(out.shape(), rng);
  backward(out, r);  // d(sum(out * R))/d(out) = R

  const double atol = 1e-3;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!diff(i)) continue;
    Tensor x = inputs[i];
    Tensor g = x.grad();
    // check every element of small inputs, a fixed sample of large ones
    int64_t n = x.numel(), stride = n > 64 ? n / 64 : 1;
    for (int64_t k = 0; k < n; k += stride) {
      float orig = x.data()[k];
      double num;
      {
        NoGradGuard ng;
        x.data()[k] = orig + c.step;
        double lp = project(c.f(inputs), r);
        x.data()[k] = orig - c.step;
        double lm = project(c.f(inputs), r);
        x.data()[k] = orig;
        num = (lp - lm) / (2.0 * double(c.step));
      }
      double ana = g.defined() ? double(g.data()[k]) : 0.0;
      double v = std::fabs(num - ana) / (c.tolerance * (std::fabs(ana) + std::fabs(num)) + atol);
      ++rep.checked;
      if (raise_worst(rep.worst, v)) {  // a NaN stays the worst
        rep.where = "input " + std::to_string(i) + " element " + std::to_string(k) + ": numeric " +
                    std::to_string(num) + " analytic " + std::to_string(ana);
      }
    }
  }
  return rep;
}

}  // namespace attn::testing
