// Basic layers. Legend: N = any leading axes (batch, time, ...).
#pragma once
#include "attn/autograd/ops.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::nn {

// y = x W^T + b. weight [out, in], bias [out]. Init as PyTorch:
// U(-1/sqrt(in), 1/sqrt(in)) for both.
class Linear : public Module {
public:
  Linear(int64_t in_features, int64_t out_features, bool bias, Rng& rng);
  // x [N..., in] -> [N..., out]
  Tensor forward(const Tensor& x) const { return linear(x, weight, bias); }
  Tensor weight, bias;  // bias undefined when built without
};

// Lookup table. weight [num, dim], init N(0, 1) as PyTorch; the padding row is
// zeroed and receives no gradient.
class Embedding : public Module {
public:
  Embedding(int64_t num_embeddings, int64_t dim, int64_t padding_idx, Rng& rng);
  // ids [N...] (float-encoded) -> [N..., dim]
  Tensor forward(const Tensor& ids) const { return embedding(weight, ids, padding_idx); }
  Tensor weight;
  int64_t padding_idx;  // -1: none
};

// Normalises the last axis; weight (ones) and bias (zeros) [dim].
class LayerNorm : public Module {
public:
  explicit LayerNorm(int64_t dim, float eps = 1e-5f);
  // x [N..., dim] -> [N..., dim]
  Tensor forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }
  Tensor weight, bias;
  float eps;
};

// Inverted dropout, active only in training mode.
class Dropout : public Module {
public:
  Dropout(float p, Rng& rng) : p(p), rng_(&register_rng("dropout_rng", dropout_seed(p, rng))) {}
  Tensor forward(const Tensor& x) const { return dropout(x, p, is_training(), *rng_); }
  float p;

private:
  Rng* rng_;  // the layer's own dropout stream (named_rngs(): "dropout_rng")
};

}  // namespace attn::nn
