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

#include "attn/tensor/random.h"
#include "attn/tensor/tensor.h"

namespace attn::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using NamedRngs = std::vector<std::pair<std::string, Rng*>>;

class Module {
public:
  virtual ~Module() = default;

  // Every parameter of this module and its children, depth first, registration order.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  int64_t num_parameters() const;
  // The parameter called `name` (dotted path); throws naming it when absent.
  Tensor parameter(const std::string& name) const;

  // Every random stream this module and its children draw from in training
  // (dropout masks), by dotted name like parameters ("encoder.dropout_rng"),
  // depth first. A training checkpoint saves and restores each one
  // (train/checkpoint.h), so a resumed run draws the masks it would have drawn.
  NamedRngs named_rngs() const;

  // Every buffer of this module and its children (depth first, dotted names):
  // state a layer updates itself in training, not a parameter (no gradient,
  // never seen by the optimizer), e.g. a REINFORCE baseline's moving average.
  // A training checkpoint saves and restores each one with the random streams.
  NamedTensors named_buffers() const;

  // Training mode switches dropout on; eval mode (train(false)) off. Recursive.
  void train(bool on = true);
  bool is_training() const { return training_; }
  void zero_grad();

protected:
  // Marks `t` as a leaf requiring grad and keeps it under `name`.
  Tensor register_parameter(const std::string& name, Tensor t);
  // A random stream owned by this module, seeded with `seed`; the reference
  // stays valid for the module's lifetime.
  Rng& register_rng(const std::string& name, uint64_t seed);
  // Keeps `t` (not requiring grad) as a buffer under `name`; the layer updates
  // its values in place (the returned handle shares them).
  Tensor register_buffer(const std::string& name, Tensor t);
  // The seed of a layer's dropout stream: one draw from the construction Rng
  // (after the layer's parameters) when it drops with p > 0; a fixed seed and
  // no draw otherwise, so adding a stream changed no existing initialisation.
  static uint64_t dropout_seed(float p, Rng& rng) { return p > 0.0f ? rng.next_u64() : 0x5eedULL; }
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }

private:
  void collect(const std::string& prefix, NamedTensors& out) const;
  void collect_rngs(const std::string& prefix, NamedRngs& out) const;
  void collect_buffers(const std::string& prefix, NamedTensors& out) const;
  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Rng>>> rngs_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace attn::nn
