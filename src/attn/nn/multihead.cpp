#include "attn/nn/multihead.h"

#include <cmath>
#include <stdexcept>

#include "attn/nn/attention_layer.h"

namespace attn::nn {

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionOptions& opt, Rng& rng) : options(opt) {
  const int64_t E = opt.embed_dim;
  if (E <= 0 || opt.num_heads <= 0 || E % opt.num_heads != 0)
    throw std::invalid_argument("MultiHeadAttention: embed_dim " + std::to_string(E) + " is not a positive multiple of num_heads " +
                                std::to_string(opt.num_heads));
  float xavier = std::sqrt(6.0f / float(E + 3 * E));  // xavier_uniform_ on [3E, E]
  in_proj_weight = register_parameter("in_proj_weight", rand_uniform({3 * E, E}, rng, -xavier, xavier));
  if (opt.bias) in_proj_bias = register_parameter("in_proj_bias", Tensor::zeros({3 * E}));
  float bound = 1.0f / std::sqrt(float(E));
  out_proj_weight = register_parameter("out_proj.weight", rand_uniform({E, E}, rng, -bound, bound));
  if (opt.bias) out_proj_bias = register_parameter("out_proj.bias", Tensor::zeros({E}));
  rng_ = &register_rng("dropout_rng", dropout_seed(opt.dropout, rng));
}

attention::AttentionOutput MultiHeadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                       const attention::Mask& mask, bool need_weights) const {
  const int64_t E = options.embed_dim, H = options.num_heads, hd = E / H;
  auto bad = [&](const Tensor& t) { return !t.defined() || t.dim() != 3 || t.size(2) != E || t.size(0) != query.size(0); };
  if (bad(query) || bad(key) || bad(value) || key.size(1) != value.size(1))
    throw std::invalid_argument("MultiHeadAttention: query " + query.shape().str() + ", key " + key.shape().str() +
                                ", value " + value.shape().str() + " (expects [B, Lq, E], [B, Lk, E], [B, Lk, E] with E = " +
                                std::to_string(E) + ")");
  const int64_t B = query.size(0), Lq = query.size(1), Lk = key.size(1);
  const bool fused = !need_weights && (options.kernel == attention::Kernel::Fused ||
                                       (options.kernel == attention::Kernel::Auto && Lq >= attention::kFusedMinQueries));
  const attention::FusedOptions f = fused ? fused_options(mask) : attention::FusedOptions();
  // column block `part` of a packed projection [B, L, n E] -> heads [B, H, L, hd]
  auto heads = [&](const Tensor& packed, int part, int64_t L) {
    Tensor x = packed.size(2) == E ? packed : slice(packed, 2, part * E, E);
    return permute(reshape(x, {B, L, H, hd}), {0, 2, 1, 3});
  };
  Tensor q, k, v;
  if (query.same(key) && query.same(value)) {
    // Self-attention: one GEMM for the three projections, qkv [B, L, 3E] = x W_in^T + b_in,
    // whose columns are already the heads of q, k, v ([B, L, 3, H, hd]); the fused kernel
    // reads them in place and writes the context as [B, L, H, hd] = [B, L, E].
    Tensor qkv = project(query, 0, 3);
    if (fused) return {linear(attention::sdpa_fused_packed(qkv, H, f), out_proj_weight, out_proj_bias), Tensor(), {}, {}, {}};
    q = heads(qkv, 0, Lq), k = heads(qkv, 1, Lk), v = heads(qkv, 2, Lk);
  } else if (key.same(value)) {
    // Cross-attention over one memory: two GEMMs, q [B, Lq, E] and kv [B, Lk, 2E]
    // (the rows W_K; W_V of in_proj together), read in place by the fused kernel.
    Tensor qp = project(query, 0, 1), kv = project(key, 1, 2);
    if (fused) return {linear(attention::sdpa_fused_cross(qp, kv, H, f), out_proj_weight, out_proj_bias), Tensor(), {}, {}, {}};
    q = heads(qp, 0, Lq), k = heads(kv, 0, Lk), v = heads(kv, 1, Lk);
  } else {
    q = heads(project(query, 0, 1), 0, Lq), k = heads(project(key, 1, 1), 0, Lk), v = heads(project(value, 2, 1), 0, Lk);
  }
  if (fused) {
    Tensor context = attention::sdpa_fused(q, k, v, f);  // [B, H, Lq, hd]
    return {linear(reshape(permute(context, {0, 2, 1, 3}), {B, Lq, E}), out_proj_weight, out_proj_bias), Tensor(), {}, {}, {}};
  }
  attention::AttentionOptions o =
      layer_attention_options(mask, options.dropout, is_training(), rng_, need_weights, options.kernel);
  attention::AttentionOutput a = attention::scaled_dot_product_attention(q, k, v, o);
  // [B, H, Lq, hd] -> [B, Lq, H, hd] -> [B, Lq, E] -> W_O
  Tensor concat_heads = reshape(permute(a.context, {0, 2, 1, 3}), {B, Lq, E});
  return {linear(concat_heads, out_proj_weight, out_proj_bias), a.weights, {}, {}, {}};
}

attention::FusedOptions MultiHeadAttention::fused_options(const attention::Mask& mask) const {
  if (!(options.dropout >= 0.0f && options.dropout < 1.0f))
    throw std::invalid_argument("MultiHeadAttention: dropout " + std::to_string(options.dropout) + " outside [0, 1)");
  attention::FusedOptions f;
  f.mask = mask;
  f.scale = 1.0f / std::sqrt(float(options.embed_dim / options.num_heads));
  if (is_training() && options.dropout > 0.0f) {
    f.dropout = options.dropout;
    f.seed = rng_->next_u64();
  }
  return f;
}

Tensor MultiHeadAttention::project(const Tensor& x, int part, int parts) const {
  const int64_t E = options.embed_dim;
  if (part == 0 && parts == 3) return linear(x, in_proj_weight, in_proj_bias);
  Tensor w = slice(in_proj_weight, 0, part * E, parts * E);
  Tensor b = in_proj_bias.defined() ? slice(in_proj_bias, 0, part * E, parts * E) : Tensor();
  return linear(x, w, b);
}

namespace {

void check_rows(const char* who, const char* what, const Tensor& x, const PaddedRows& r, int64_t E) {
  if (!x.defined() || x.dim() != 2 || x.size(0) != r.count() || x.size(1) != E)
    throw std::invalid_argument(std::string("MultiHeadAttention::") + who + ": " + what + " " +
                                (x.defined() ? x.shape().str() : "undefined") + " for " + std::to_string(r.count()) +
                                " rows (expects [N, " + std::to_string(E) + "])");
}

}  // namespace

Tensor MultiHeadAttention::self_attention_rows(const Tensor& x, const PaddedRows& rows, bool causal) const {
  check_rows("self_attention_rows", "x", x, rows, options.embed_dim);
  attention::Mask mask;
  mask.key_lengths = rows.lengths_tensor;
  mask.causal = causal;
  const attention::FusedOptions f = fused_options(mask);
  Tensor qkv = unpack_padded(project(x, 0, 3), rows);  // [B, L, 3E]: the heads of q, k, v
  Tensor context = pack_padded(attention::sdpa_fused_packed(qkv, options.num_heads, f), rows);
  return linear(context, out_proj_weight, out_proj_bias);
}

Tensor MultiHeadAttention::cross_attention_rows(const Tensor& x, const PaddedRows& q_rows, const Tensor& memory,
                                                const PaddedRows& m_rows) const {
  check_rows("cross_attention_rows", "x", x, q_rows, options.embed_dim);
  check_rows("cross_attention_rows", "memory", memory, m_rows, options.embed_dim);
  if (q_rows.batch() != m_rows.batch())
    throw std::invalid_argument("MultiHeadAttention::cross_attention_rows: " + std::to_string(q_rows.batch()) +
                                " query sentences, " + std::to_string(m_rows.batch()) + " memories");
  attention::Mask mask;
  mask.key_lengths = m_rows.lengths_tensor;
  const attention::FusedOptions f = fused_options(mask);
  Tensor q = unpack_padded(project(x, 0, 1), q_rows);         // [B, Lq, E]
  Tensor kv = unpack_padded(project(memory, 1, 2), m_rows);   // [B, Lk, 2E]: the heads of k, then v
  Tensor context = pack_padded(attention::sdpa_fused_cross(q, kv, options.num_heads, f), q_rows);
  return linear(context, out_proj_weight, out_proj_bias);
}

PositionalEncoding::PositionalEncoding(int64_t dim, int64_t max_len, float p, Rng& rng)
    : dropout(p), rng_(&register_rng("dropout_rng", dropout_seed(p, rng))) {
  if (dim <= 0 || max_len <= 0)
    throw std::invalid_argument("PositionalEncoding: dim " + std::to_string(dim) + ", max_len " + std::to_string(max_len));
  table = Tensor::empty({max_len, dim});
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; i < dim; ++i) {
      // the pair (2k, 2k+1) shares the frequency 1 / 10000^(2k / dim)
      double freq = std::pow(10000.0, -double(i - i % 2) / double(dim));
      double a = double(pos) * freq;
      table.data()[pos * dim + i] = float(i % 2 == 0 ? std::sin(a) : std::cos(a));
    }
}

Tensor PositionalEncoding::forward(const Tensor& x, int64_t start) const {
  if (!x.defined() || x.dim() != 3 || x.size(2) != table.size(1) || start < 0 || start + x.size(1) > table.size(0))
    throw std::invalid_argument("PositionalEncoding: input " + x.shape().str() + " from position " + std::to_string(start) +
                                " for table " + table.shape().str() + " (expects [B, L, E] with start + L <= max_len)");
  Tensor pe = table.narrow0(start, x.size(1));  // [L, E], broadcast over the batch
  return attn::dropout(add(x, pe), dropout, is_training(), *rng_);
}

}  // namespace attn::nn
