// Learned absolute positions (Gehring et al. 2017; the option Vaswani et al. 2017
// compare with sinusoids in sec. 3.5 and table 3 (E)): one trained vector per
// position, added to the input, then dropout. The sinusoidal table without
// parameters is nn::PositionalEncoding (multihead.h); both share forward(x, start).
//
// Legend: B batch, L length, E model size, P max_len (positions 0 .. P-1).
#pragma once
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::nn {

// Parameter: weight [P, E], init N(0, 1/E) as fairseq's learned positions (the
// scale of a token embedding multiplied by sqrt(E) and of the sinusoids' entries).
class LearnedPositionalEmbedding : public Module {
public:
  LearnedPositionalEmbedding(int64_t dim, int64_t max_len, float dropout, Rng& rng);
  // x [B, L, E] (start + L <= P) -> dropout(x + weight[start : start + L])
  Tensor forward(const Tensor& x, int64_t start = 0) const;
  Tensor weight;  // [P, E]
  float dropout;

private:
  Rng* rng_;  // the layer's own dropout stream (named_rngs(): "dropout_rng")
};

}  // namespace attn::nn
