// Pieces shared by the translation models (internal to models/).
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/models/config.h"
#include "attn/nn/layers.h"
#include "attn/nn/rnn.h"

namespace attn::models::detail {

// A model's own config section: throws std::invalid_argument "<cls>: config type is not <type>"
// for a config of another kind.
template <class T>
const T& own_section(const ModelConfig& c, const char* cls, const char* type) {
  if (c.type != type) throw std::invalid_argument(std::string(cls) + ": config type is not " + type);
  return c.section<T>();
}

// Whether t is defined and of shape s (a weight or input a fused kernel can take)
inline bool fits(const Tensor& t, const Shape& s) { return t.defined() && t.shape() == s; }
// A copy of t outside the autograd graph (undefined stays undefined): a search's own weights
inline Tensor detached_copy(const Tensor& t) { return t.defined() ? t.detach().clone() : Tensor(); }

// [B] float-encoded lengths
Tensor lengths_tensor(const std::vector<int64_t>& lengths);
// x [B, S, D] (zeros past each length) -> mean over the valid positions [B, D]. Differentiable.
Tensor mean_over_valid(const Tensor& x, const std::vector<int64_t>& lengths);
// Throws std::invalid_argument unless src is [B, S] and every length is in [1, S].
void check_source(const char* who, const Tensor& src, const std::vector<int64_t>& lengths, int64_t vocab);
// An embedding [vocab, E] (PyTorch init N(0, 1); N(0, 1/sqrt(E)) when tied to the output).
std::shared_ptr<nn::Embedding> make_embedding(int64_t vocab, const ModelConfig& c, Rng& rng);
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's Linear init
Tensor uniform_param(const Shape& shape, int64_t fan_in, Rng& rng);
// The columns [c0, c0 + cols) of w [rows, ld] as a contiguous [rows, cols] copy, or
// transposed [cols, rows] (the weights a decoder's step products read). No autograd.
Tensor columns(const Tensor& w, int64_t c0, int64_t cols, bool transposed = false);

struct EncoderRun {
  Tensor output;        // [B, S, D*H] the last layer's outputs (forward features, then reverse)
  Tensor last_reverse;  // [B, H] the last layer's reverse final state (h at position 0); undefined if unidirectional
};
// Runs the layers of `stack` (built with RnnOptions::dropout = 0, so that it never
// draws from the Rng it was built with) over x [B, S, in], with dropout p between
// layers drawn from `rng`, the model's dropout Rng, whose state checkpoints keep.
EncoderRun run_encoder(const nn::RnnStack& stack, bool lstm, const Tensor& x, const std::vector<int64_t>& lengths,
                       float p, bool training, Rng& rng);

}  // namespace attn::models::detail
