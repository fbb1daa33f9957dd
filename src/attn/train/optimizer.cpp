// Optimizer base: parameter bookkeeping, zero_grad, and state import/export.
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "attn/train/optim.h"

namespace attn::train {

namespace {

constexpr int64_t kCountHalf = int64_t(1) << 24;  // F32 holds every integer below 2^24 exactly

// A count as [c / 2^24, c % 2^24] (see optim.h).
Tensor encode_count(int64_t c) { return Tensor::from({float(c / kCountHalf), float(c % kCountHalf)}, Shape{2}); }

int64_t decode_count(const Tensor& t, const std::string& name) {
  if (t.shape() != Shape{2})
    throw std::invalid_argument("optimizer state '" + name + "': expected shape [2] (a step count), found " +
                                t.shape().str());
  float hi = t.data()[0], lo = t.data()[1];
  if (!(hi >= 0 && lo >= 0 && lo < float(kCountHalf) && hi < float(kCountHalf) && hi == std::floor(hi) &&
        lo == std::floor(lo)))
    throw std::invalid_argument("optimizer state '" + name + "': malformed step count [" + std::to_string(hi) + ", " +
                                std::to_string(lo) + "]");
  return int64_t(hi) * kCountHalf + int64_t(lo);
}

}  // namespace

Optimizer::Optimizer(nn::NamedTensors params) : params_(std::move(params)), param_steps_(params_.size(), 0) {
  std::set<std::string> names;
  std::set<const TensorImpl*> impls;
  for (const auto& [name, p] : params_) {
    if (!p.defined()) throw std::invalid_argument("optimizer: parameter '" + name + "' is an undefined tensor");
    if (!names.insert(name).second) throw std::invalid_argument("optimizer: parameter name '" + name + "' appears twice");
    if (!impls.insert(p.impl()).second)
      throw std::invalid_argument("optimizer: parameter '" + name + "' is the same tensor as an earlier one");
  }
}

void Optimizer::add_buffer_kind(const std::string& kind) {
  buffer_kinds_.push_back(kind);
  std::vector<Tensor> bufs;
  bufs.reserve(params_.size());
  for (const auto& [name, p] : params_) bufs.push_back(Tensor::zeros(p.shape()));
  buffers_.push_back(std::move(bufs));
}

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0) || !std::isfinite(lr)) throw std::invalid_argument("optimizer: learning rate " + std::to_string(lr) + " must be finite and >= 0");
  lr_ = lr;
}

void Optimizer::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.shape() != p.shape())
      throw std::logic_error("optimizer: gradient of '" + params_[i].first + "' has shape " + g.shape().str() +
                             ", the parameter " + p.shape().str());
    ++param_steps_[i];
    update(i, p, g);
  }
  ++step_count_;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& [name, p] : params_) {
    if (set_to_none) {
      p.zero_grad();
    } else if (Tensor g = p.grad(); g.defined()) {
      g.fill_(0.0f);
    }
  }
}

nn::NamedTensors Optimizer::state() const {
  nn::NamedTensors out;
  out.emplace_back("step", encode_count(step_count_));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (param_steps_[i] == 0) continue;
    const std::string& pname = params_[i].first;
    out.emplace_back("step." + pname, encode_count(param_steps_[i]));
    for (size_t b = 0; b < buffer_kinds_.size(); ++b) out.emplace_back(buffer_kinds_[b] + "." + pname, buffers_[b][i].detach());
  }
  return out;
}

void Optimizer::load_state(const nn::NamedTensors& state) {
  std::map<std::string, size_t> param_index;
  for (size_t i = 0; i < params_.size(); ++i) param_index[params_[i].first] = i;
  // Parse and validate everything first, so a bad state leaves the optimizer untouched.
  int64_t step = -1;
  std::vector<int64_t> steps(params_.size(), 0);
  std::vector<std::vector<const Tensor*>> bufs(buffer_kinds_.size(), std::vector<const Tensor*>(params_.size(), nullptr));
  std::set<std::string> seen;
  for (const auto& [name, t] : state) {
    if (!seen.insert(name).second) throw std::invalid_argument("optimizer state: entry '" + name + "' appears twice");
    if (name == "step") {
      step = decode_count(t, name);
      continue;
    }
    size_t dot = name.find('.');
    std::string kind = dot == std::string::npos ? name : name.substr(0, dot);
    std::string pname = dot == std::string::npos ? "" : name.substr(dot + 1);
    auto pi = param_index.find(pname);
    if (pi == param_index.end())
      throw std::invalid_argument("optimizer state: entry '" + name + "' does not name a parameter of this " + this->name() +
                                  " optimizer");
    size_t i = pi->second;
    if (kind == "step") {
      steps[i] = decode_count(t, name);
      continue;
    }
    size_t b = 0;
    while (b < buffer_kinds_.size() && buffer_kinds_[b] != kind) ++b;
    if (b == buffer_kinds_.size())
      throw std::invalid_argument("optimizer state: entry '" + name + "' is not state of a " + std::string(this->name()) +
                                  " optimizer (state saved by a different optimizer?)");
    if (t.shape() != params_[i].second.shape())
      throw std::invalid_argument("optimizer state '" + name + "': expected shape " + params_[i].second.shape().str() +
                                  ", found " + t.shape().str());
    bufs[b][i] = &t;
  }
  if (step < 0) throw std::invalid_argument("optimizer state: no 'step' entry");
  for (size_t i = 0; i < params_.size(); ++i) {
    for (size_t b = 0; b < buffer_kinds_.size(); ++b) {
      bool has = bufs[b][i] != nullptr;
      if (has != (steps[i] > 0))
        throw std::invalid_argument("optimizer state: parameter '" + params_[i].first + "' has " +
                                    (has ? "'" + buffer_kinds_[b] + "." + params_[i].first + "' but no step count"
                                         : "a step count but no '" + buffer_kinds_[b] + "." + params_[i].first + "'"));
    }
  }
  step_count_ = step;
  param_steps_ = steps;
  for (size_t b = 0; b < buffer_kinds_.size(); ++b)
    for (size_t i = 0; i < params_.size(); ++i) {
      if (bufs[b][i])
        buffers_[b][i].copy_from(*bufs[b][i]);
      else
        buffers_[b][i].fill_(0.0f);
    }
}

}  // namespace attn::train
