// Module: a layer that owns named parameters and child modules.
//
// Parameter names are dotted paths (`encoder.rnn.weight_ih_l0`) and follow
// PyTorch's names for the same layers, so a state dict maps one to one onto
// torch's (tests copy weights from torch by name; checkpoints are safetensors
// files a torch user can read).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
public:
  virtual ~Module() = default;

  // Every parameter of this module and its children, depth first, registration order.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  int64_t num_parameters() const;
  // The parameter called `name` (dotted path); throws naming it when absent.
  Tensor parameter(const std::string& name) const;

  // Training mode switches dropout on; eval mode (train(false)) off. Recursive.
  void train(bool on = true);
  bool is_training() const { return training_; }
  void zero_grad();

protected:
  // Marks `t` as a leaf requiring grad and keeps it under `name`.
  Tensor register_parameter(const std::string& name, Tensor t);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }

private:
  void collect(const std::string& prefix, NamedTensors& out) const;
  NamedTensors params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace attn::nn
