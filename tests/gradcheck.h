// Finite-difference gradient checks, table-driven (ggml's test-backend-ops
// style): each case names the op it checks, builds a scalar-free output from
// its inputs, and gives its own step and tolerance. Cases register themselves
// from any test file with ATTN_GRADCHECK_CASE; test_gradcheck.cpp runs them all
// and fails when an op in autograd::op_names() has no case.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attn/autograd/ops.h"

namespace attn::testing {

struct GradcheckCase {
  std::string op;                     // the op name (as in op_names()) this case checks
  std::string label;                  // what this variant covers
  std::vector<Shape> input_shapes;    // inputs are N(0,1) with the case's seed, then `prepare`
  std::function<Tensor(const std::vector<Tensor>&)> f;
  std::function<void(std::vector<Tensor>&)> prepare;  // optional: make inputs valid (e.g. positive)
  std::vector<bool> differentiable;   // per input; empty = all
  float step = 1e-2f;                 // central-difference step
  double tolerance = 2e-2;            // |num - ana| <= tol * (|ana| + |num| + 1e-2)... see gradcheck.cpp
};

std::vector<GradcheckCase>& gradcheck_cases();

struct GradcheckRegistrar {
  explicit GradcheckRegistrar(GradcheckCase c) { gradcheck_cases().push_back(std::move(c)); }
};

#define ATTN_GRADCHECK_CONCAT2(a, b) a##b
#define ATTN_GRADCHECK_CONCAT(a, b) ATTN_GRADCHECK_CONCAT2(a, b)
#define ATTN_GRADCHECK_CASE(...) \
  static ::attn::testing::GradcheckRegistrar ATTN_GRADCHECK_CONCAT(gradcheck_case_, __COUNTER__)(::attn::testing::GradcheckCase(__VA_ARGS__))

// Largest violation found (<= 1 passes) and where; also verifies that a node
// named `c.op` is on the tape of the case's output.
struct GradcheckReport {
  double worst = 0;  // max over checked elements of |num - ana| / (tol * (|ana| + |num|) + atol)
  std::string where;
  bool op_on_tape = false;
  int checked = 0;
};
GradcheckReport run_gradcheck(const GradcheckCase& c, uint64_t seed);

}  // namespace attn::testing
