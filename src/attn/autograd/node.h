// The tape: a define-by-run graph of Nodes, one per differentiable op call.
//
// An op's forward computes its outputs eagerly; when grad mode is on and some
// input requires a gradient it also creates a Node that keeps the inputs and
// whatever the backward needs (captured in `backward_fn`), and points its
// outputs' grad_fn at it. attn::backward() walks the graph in reverse
// topological order, handing each node the gradients of its outputs and
// accumulating what it returns into its inputs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::autograd {

// Given d(loss)/d(output_i) for each output (an undefined Tensor means zero),
// returns d(loss)/d(input_j) for each input (undefined where not needed).
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& douts)>;

struct Node {
  std::string name;                 // op name, for error messages and the gradcheck registry
  std::vector<Tensor> inputs;       // inputs in op order (kept alive for backward)
  std::vector<Shape> output_shapes;
  BackwardFn backward_fn;
  int64_t sequence = 0;             // creation order: a valid topological order key
};

// Grad mode (thread-local): when off, ops record nothing.
bool grad_enabled();
void set_grad_enabled(bool on);
struct NoGradGuard {
  NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
  bool prev_;
};

// True when an op on these inputs must be recorded.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// Records a node producing `outputs` from `inputs`; no-op unless needs_grad(inputs).
// `outputs` are modified in place (grad_fn set, requires_grad true).
void record(const char* name, const std::vector<Tensor>& inputs, std::vector<Tensor*> outputs, BackwardFn fn);
inline void record(const char* name, const std::vector<Tensor>& inputs, Tensor& output, BackwardFn fn) {
  record(name, inputs, std::vector<Tensor*>{&output}, std::move(fn));
}

}  // namespace attn::autograd

namespace attn {
using autograd::NoGradGuard;
// Backpropagates from `root`: a scalar, or any tensor with `seed` = d(loss)/d(root)
// of root's shape. Gradients of leaves that require grad accumulate (+=) into .grad().
void backward(const Tensor& root, const Tensor& seed = Tensor());

// Called by backward() once a leaf's .grad() is final for this pass: the last
// node that reads the leaf has run (e.g. a data-parallel run starts summing it
// over the replicas while the rest of the backward runs). Not called for a
// leaf whose last reader received no gradient.
using LeafReadyFn = std::function<void(const Tensor& leaf)>;
void backward(const Tensor& root, const Tensor& seed, const LeafReadyFn& on_leaf_ready);
}  // namespace attn
