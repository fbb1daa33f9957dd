#include "attn/nn/attention_layer.h"

#include <cmath>
#include <stdexcept>

namespace attn::nn {

namespace {
Tensor uniform_init(const Shape& shape, int64_t fan_in, Rng& rng) {
  const float bound = 1.0f / std::sqrt(float(fan_in));
  return rand_uniform(shape, rng, -bound, bound);
}
}  // namespace

attention::AttentionOptions layer_attention_options(const attention::Mask& mask, float dropout, bool training,
                                                    Rng* rng, bool need_weights, attention::Kernel kernel) {
  attention::AttentionOptions o;
  o.mask = mask;
  o.dropout = dropout;
  o.training = training;
  o.rng = rng;
  o.need_weights = need_weights;
  o.kernel = need_weights ? attention::Kernel::Materialized : kernel;
  return o;
}

AttentionLayer::AttentionLayer(const AttentionLayerOptions& opt, Rng& rng) : options(opt) {
  const int64_t D = opt.query_dim, Dk = opt.key_dim, A = opt.attn_dim > 0 ? opt.attn_dim : opt.key_dim;
  options.attn_dim = A;
  if (D <= 0 || Dk <= 0)
    throw std::invalid_argument("AttentionLayer: query_dim " + std::to_string(D) + ", key_dim " + std::to_string(Dk) +
                                " (both must be positive)");
  if ((opt.score == ScoreKind::Dot || opt.score == ScoreKind::ScaledDot) && D != Dk)
    throw std::invalid_argument("AttentionLayer: a dot-product score needs query_dim == key_dim (got " +
                                std::to_string(D) + " and " + std::to_string(Dk) + ")");
  if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
    throw std::invalid_argument("AttentionLayer: dropout " + std::to_string(opt.dropout) + " outside [0, 1)");
  if (opt.window != attention::Window::Global && opt.half_width < 0)
    throw std::invalid_argument("AttentionLayer: half_width " + std::to_string(opt.half_width) + " < 0");
  switch (opt.score) {
    case ScoreKind::Dot:
    case ScoreKind::ScaledDot: break;
    case ScoreKind::General: W = register_parameter("W", uniform_init({D, Dk}, Dk, rng)); break;
    case ScoreKind::Additive:
      W1 = register_parameter("W1", uniform_init({A, D}, D, rng));
      W2 = register_parameter("W2", uniform_init({A, Dk}, Dk, rng));
      v = register_parameter("v", uniform_init({A}, A, rng));
      if (opt.additive_bias) bias = register_parameter("bias", uniform_init({A}, D, rng));
      break;
    case ScoreKind::Concat:
      Wa = register_parameter("Wa", uniform_init({A, D + Dk}, D + Dk, rng));
      v = register_parameter("v", uniform_init({A}, A, rng));
      break;
  }
  if (opt.window == attention::Window::LocalPredictive) {
    Wp = register_parameter("Wp", uniform_init({A, D}, D, rng));
    vp = register_parameter("vp", uniform_init({A}, A, rng));
  }
  rng_ = &register_rng("dropout_rng", dropout_seed(opt.dropout, rng));
}

attention::Score AttentionLayer::score() const {
  switch (options.score) {
    case ScoreKind::Dot: return attention::Dot{};
    case ScoreKind::ScaledDot: return attention::ScaledDot{};
    case ScoreKind::General: return attention::General{W};
    case ScoreKind::Additive: return attention::Additive{W1, W2, v, bias};
    case ScoreKind::Concat: return attention::Concat{Wa, v};
  }
  throw std::logic_error("AttentionLayer: unknown score kind");
}

attention::AttentionOutput AttentionLayer::forward(const Tensor& q, const Tensor& k, const Tensor& v_in,
                                                   const attention::Mask& mask, bool need_weights,
                                                   int64_t position_offset) const {
  attention::AttentionOptions o =
      layer_attention_options(mask, options.dropout, is_training(), rng_, need_weights, options.kernel);
  o.local.window = options.window;
  o.local.half_width = options.half_width;
  o.local.position_offset = position_offset;
  o.local.Wp = Wp;
  o.local.vp = vp;
  return attention::attention(q, k, v_in, score(), o);
}

}  // namespace attn::nn
