#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <unordered_map>

#include "attn/autograd/node.h"
#include "attn/tensor/kernels.h"

namespace attn::autograd {
namespace {
thread_local bool g_grad_enabled = true;
std::atomic<int64_t> g_sequence{0};
}  // namespace

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void check_registered(const char* name);  // op_names.cpp

void record(const char* name, const std::vector<Tensor>& inputs, std::vector<Tensor*> outputs, BackwardFn fn) {
  if (!needs_grad(inputs)) return;
  check_registered(name);
  auto node = std::make_shared<Node>();
  node->name = name;
  node->inputs = inputs;
  node->backward_fn = std::move(fn);
  node->sequence = g_sequence++;
  for (size_t i = 0; i < outputs.size(); ++i) {
    TensorImpl* impl = outputs[i]->impl();
    node->output_shapes.push_back(impl->shape);
    impl->requires_grad = true;
    impl->grad_fn = node;
    impl->output_index = int(i);
  }
}

namespace {
// dst = dst + src, or dst = src when dst is undefined. Never in place: a
// backward may return one tensor as the gradient of several inputs (add does),
// so a pending gradient can be shared and must not be mutated.
void accumulate(Tensor& dst, const Tensor& src) {
  dst = dst.defined() ? kernels::add(dst, src) : src;
}
}  // namespace

}  // namespace attn::autograd

namespace attn {

void backward(const Tensor& root, const Tensor& seed) { backward(root, seed, LeafReadyFn()); }

void backward(const Tensor& root, const Tensor& seed, const LeafReadyFn& on_leaf_ready) {
  using namespace autograd;
  if (!root.requires_grad()) throw std::invalid_argument("backward: tensor does not require grad (no op on it was recorded)");
  Tensor g = seed;
  if (!g.defined()) {
    if (root.numel() != 1)
      throw std::invalid_argument("backward: root of shape " + root.shape().str() + " is not a scalar; pass a seed");
    g = Tensor::ones(root.shape());
  }
  check_same_shape(root, g, "backward seed");

  if (!root.grad_fn()) {  // a leaf: d(root)/d(root)
    Tensor acc = root.grad();
    accumulate(acc, g.clone());
    root.impl()->grad = acc.impl_ptr();
    return;
  }

  // Collect the nodes reachable from root; Node::sequence is a topological order.
  std::vector<Node*> nodes;
  std::unordered_map<Node*, std::vector<Tensor>> pending;  // node -> grads of its outputs
  // with on_leaf_ready: each leaf's last reader (the node of lowest sequence that reads it)
  std::unordered_map<const TensorImpl*, const Node*> last_reader;
  std::vector<Node*> stack{root.grad_fn().get()};
  pending[root.grad_fn().get()];
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    nodes.push_back(n);
    for (const Tensor& in : n->inputs) {
      if (in.defined() && in.grad_fn() && !pending.count(in.grad_fn().get())) {
        pending[in.grad_fn().get()];
        stack.push_back(in.grad_fn().get());
      }
      if (on_leaf_ready && in.defined() && !in.grad_fn() && in.requires_grad()) {
        const Node*& last = last_reader[in.impl()];
        if (!last || n->sequence < last->sequence) last = n;
      }
    }
  }
  std::sort(nodes.begin(), nodes.end(), [](Node* a, Node* b) { return a->sequence > b->sequence; });
  for (Node* n : nodes) pending[n].resize(n->output_shapes.size());
  pending[root.grad_fn().get()][root.impl()->output_index] = g;

  for (Node* n : nodes) {
    std::vector<Tensor> douts = std::move(pending[n]);
    bool any = false;
    for (auto& d : douts) any = any || d.defined();
    if (!any) continue;
    std::vector<Tensor> dins = n->backward_fn(douts);
    if (dins.size() != n->inputs.size())
      throw std::logic_error("backward of " + n->name + " returned " + std::to_string(dins.size()) + " gradients for " +
                             std::to_string(n->inputs.size()) + " inputs");
    for (size_t i = 0; i < dins.size(); ++i) {
      const Tensor& in = n->inputs[i];
      if (!dins[i].defined() || !in.defined() || !in.requires_grad()) continue;
      if (dins[i].shape() != in.shape())
        throw std::logic_error("backward of " + n->name + ": gradient " + dins[i].shape().str() + " for input " +
                               std::to_string(i) + " of shape " + in.shape().str());
      if (in.grad_fn()) {
        accumulate(pending[in.grad_fn().get()][in.impl()->output_index], dins[i]);
      } else {
        Tensor acc = in.grad();
        if (acc.defined()) {
          kernels::add_inplace(acc, dins[i]);
        } else if (dins[i].impl_ptr().use_count() == 1 && dins[i].impl()->storage.use_count() == 1) {
          // Nothing else refers to this gradient (no other input's entry, no
          // saved tensor, no view): the leaf takes it over without a copy.
          in.impl()->grad = dins[i].impl_ptr();
        } else {
          // Shared (e.g. add hands one tensor to both inputs): .grad is updated
          // in place later, so it must own its storage.
          in.impl()->grad = dins[i].clone().impl_ptr();
        }
      }
    }
    if (on_leaf_ready)
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const Tensor& in = n->inputs[i];
        if (!in.defined() || in.grad_fn() || !in.requires_grad()) continue;
        const auto it = last_reader.find(in.impl());
        // once per leaf, even when a node reads it twice
        if (it != last_reader.end() && it->second == n) {
          last_reader.erase(it);
          on_leaf_ready(in);
        }
      }
  }
}

}  // namespace attn
