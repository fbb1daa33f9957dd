#include "attn/nn/module.h"

#include <stdexcept>

namespace attn::nn {

void Module::collect(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [name, t] : params_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

void Module::collect_rngs(const std::string& prefix, NamedRngs& out) const {
  for (const auto& [name, r] : rngs_) out.emplace_back(prefix + name, r.get());
  for (const auto& [name, child] : children_) child->collect_rngs(prefix + name + ".", out);
}

void Module::collect_buffers(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [name, t] : buffers_) out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect_buffers(prefix + name + ".", out);
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect_buffers("", out);
  return out;
}

NamedRngs Module::named_rngs() const {
  NamedRngs out;
  collect_rngs("", out);
  return out;
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

Tensor Module::parameter(const std::string& name) const {
  for (auto& [n, t] : named_parameters())
    if (n == name) return t;
  throw std::invalid_argument("module has no parameter '" + name + "'");
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.zero_grad();
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  for (auto& [n, p] : params_)
    if (n == name) throw std::logic_error("parameter '" + name + "' registered twice");
  t.set_requires_grad(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  for (auto& [n, b] : buffers_)
    if (n == name) throw std::logic_error("buffer '" + name + "' registered twice");
  buffers_.emplace_back(name, t);
  return t;
}

Rng& Module::register_rng(const std::string& name, uint64_t seed) {
  for (auto& [n, r] : rngs_)
    if (n == name) throw std::logic_error("random stream '" + name + "' registered twice");
  rngs_.emplace_back(name, std::make_shared<Rng>(seed));
  return *rngs_.back().second;
}

}  // namespace attn::nn
