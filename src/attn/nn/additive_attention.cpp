#include "attn/nn/additive_attention.h"

#include <cmath>

namespace attn::nn {

AdditiveAttention::AdditiveAttention(int64_t query_dim, int64_t key_dim, int64_t attn_dim, Rng& rng) {
  float bq = 1.0f / std::sqrt(float(query_dim)), bk = 1.0f / std::sqrt(float(key_dim)),
        bv = 1.0f / std::sqrt(float(attn_dim));
  query_proj_weight = register_parameter("query_proj.weight", rand_uniform({attn_dim, query_dim}, rng, -bq, bq));
  key_proj_weight = register_parameter("key_proj.weight", rand_uniform({attn_dim, key_dim}, rng, -bk, bk));
  key_proj_bias = register_parameter("key_proj.bias", rand_uniform({attn_dim}, rng, -bk, bk));
  v = register_parameter("v", rand_uniform({attn_dim}, rng, -bv, bv));
}

}  // namespace attn::nn
