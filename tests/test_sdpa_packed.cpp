// sdpa_fused_packed (strided q, k, v inside one [B, L, 3E] tensor, context written
// as [B, L, E]) against sdpa_fused on the permuted tensors, and
// MultiHeadAttention's packed self-attention path against its materialising path.
#include <gtest/gtest.h>

#include "attn/attention/attention.h"
#include "attn/nn/multihead.h"
#include "oracle.h"

namespace attn::testing::sdpa_packed_test {
namespace {
using namespace attn::attention;

// [B, L, 3E] -> part p of [B, H, L, D]
Tensor head_part(const Tensor& qkv, int p, int64_t H) {
  const int64_t B = qkv.size(0), L = qkv.size(1), E = qkv.size(2) / 3;
  return permute(reshape(slice(qkv, 2, p * E, E), {B, L, H, E / H}), {0, 2, 1, 3});
}

// keep: 0 none, 1 a [B, H, L, L] mask with one fully hidden row, 2 a [L, L] mask
void compare(int64_t B, int64_t L, int64_t H, int64_t D, bool causal, bool lengths, float dropout, int keep = 0) {
  Rng rng(7);
  const int64_t E = H * D;
  Tensor qkv = randn({B, L, 3 * E}, rng).set_requires_grad();
  Tensor r = randn({B, L, E}, rng);
  FusedOptions o;
  o.scale = 1.0f / std::sqrt(float(D));
  o.mask.causal = causal;
  if (lengths) {
    o.mask.key_lengths = Tensor::empty({B});
    for (int64_t b = 0; b < B; ++b) o.mask.key_lengths.data()[b] = float(L - (b * 37) % L);
  }
  if (keep) {
    o.mask.keep = keep == 1 ? Tensor::empty({B, H, L, L}) : Tensor::empty({L, L});
    float* m = o.mask.keep.data();
    for (int64_t e = 0; e < o.mask.keep.numel(); ++e) m[e] = rng.uniform() < 0.7f ? 1.0f : 0.0f;
    if (keep == 1) std::fill(m + 3 * L, m + 4 * L, 0.0f);  // row 3 of (b 0, h 0) sees nothing
  }
  o.dropout = dropout;
  o.seed = 3;
  Tensor packed = sdpa_fused_packed(qkv, H, o);
  backward(sum_all(mul(packed, r)));
  Tensor g_packed = qkv.grad().clone();
  qkv.zero_grad();
  Tensor ref = sdpa_fused(head_part(qkv, 0, H), head_part(qkv, 1, H), head_part(qkv, 2, H), o);
  Tensor ref_ble = reshape(permute(ref, {0, 2, 1, 3}), {B, L, E});
  backward(sum_all(mul(ref_ble, r)));
  EXPECT_CLOSE(packed, ref_ble, 1e-5, "context");
  EXPECT_CLOSE(g_packed, qkv.grad(), 1e-4, "d qkv");
}

TEST(SdpaPacked, MatchesPermutedSdpaFused) { compare(2, 37, 3, 8, false, false, 0.0f); }
TEST(SdpaPacked, CausalLengthsDropout) { compare(2, 130, 2, 16, true, true, 0.1f); }
// one (b, h) over 2+ threads: the backward splits the keys and sums dQ partials
TEST(SdpaPacked, SplitKeysPartialSums) { compare(1, 300, 1, 8, false, false, 0.0f); }
// a boolean mask read through the packed layout's strides
TEST(SdpaPacked, KeepMaskPerHeadWithHiddenRow) { compare(2, 70, 2, 16, false, true, 0.0f, 1); }
TEST(SdpaPacked, KeepMask2dCausal) { compare(2, 45, 3, 8, true, false, 0.0f, 2); }

TEST(SdpaPacked, RejectsBadShapes) {
  EXPECT_THROW(sdpa_fused_packed(Tensor::zeros({2, 4, 10}), 2, {}), std::invalid_argument);
  EXPECT_THROW(sdpa_fused_packed(Tensor::zeros({2, 4}), 1, {}), std::invalid_argument);
}

// The packed self-attention path (query = key = value, no weights) against the
// materialising path of the same module: output and every gradient.
TEST(MultiHeadPacked, SelfAttentionMatchesMaterialized) {
  for (bool causal : {false, true}) {
    Rng rng(3);
    nn::MultiHeadAttention mha(nn::MultiHeadAttentionOptions(16, 4), rng);
    Tensor x = randn({2, 20, 16}, rng).set_requires_grad();
    Tensor r = randn({2, 20, 16}, rng);
    attention::Mask mask;
    mask.causal = causal;
    mask.key_lengths = Tensor::from({20.0f, 13.0f}, {2});
    auto run = [&](attention::Kernel k) {
      mha.options.kernel = k;
      mha.zero_grad(), x.zero_grad();
      Tensor y = mha.forward(x, x, x, mask).context;
      backward(sum_all(mul(y, r)));
      std::vector<Tensor> g = {y.detach(), x.grad().clone()};
      for (auto& [name, p] : mha.named_parameters()) g.push_back(p.grad().clone());
      return g;
    };
    std::vector<Tensor> a = run(attention::Kernel::Fused), b = run(attention::Kernel::Materialized);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_CLOSE(a[i], b[i], 1e-4, "output/gradient " + std::to_string(i));
  }
}

}  // namespace
}  // namespace attn::testing::sdpa_packed_test
