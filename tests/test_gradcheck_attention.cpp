// Finite-difference checks of the attention ops ("sdpa_fused", "additive_step"),
// registered into the table that tests/test_gradcheck.cpp runs.
#include "attn/attention/additive_step.h"
#include "attn/attention/attention.h"
#include "gradcheck.h"

namespace attn::testing::gradcheck_attention_test {
namespace {
using T = std::vector<Tensor>;
using namespace attn::attention;

Tensor fused(const T& x, const FusedOptions& o) { return sdpa_fused(x[0], x[1], x[2], o); }

ATTN_GRADCHECK_CASE({"sdpa_fused", "no mask, odd sizes", {{1, 2, 5, 4}, {1, 2, 7, 4}, {1, 2, 7, 3}},
                     [](const T& x) { return fused(x, FusedOptions{{}, 0.5f}); }});
ATTN_GRADCHECK_CASE({"sdpa_fused", "causal + key lengths (one 0)", {{2, 1, 6, 3}, {2, 1, 6, 3}, {2, 1, 6, 2}},
                     [](const T& x) {
                       FusedOptions o;
                       o.scale = 0.6f;
                       o.mask.causal = true;
                       o.mask.key_lengths = Tensor::from({4.0f, 0.0f}, {2});
                       return fused(x, o);
                     }});
ATTN_GRADCHECK_CASE({"sdpa_fused", "keep mask [B,1,Lq,Lk] + dropout 0.3", {{2, 2, 4, 3}, {2, 2, 5, 3}, {2, 2, 5, 3}},
                     [](const T& x) {
                       FusedOptions o;
                       o.scale = 0.7f;
                       o.mask.keep = Tensor::empty({2, 1, 4, 5});
                       for (int64_t i = 0; i < 40; ++i) o.mask.keep.data()[i] = (i * 7) % 3 == 0 ? 0.0f : 1.0f;
                       o.dropout = 0.3f;
                       o.seed = 11;
                       return fused(x, o);
                     }});
ATTN_GRADCHECK_CASE({"sdpa_fused", "spans several key and query blocks", {{1, 1, 70, 2}, {1, 1, 140, 2}, {1, 1, 140, 2}},
                     [](const T& x) { return fused(x, FusedOptions{{}, 0.5f}); }});
// packed [B, L, 3 H D]: 2 heads of size 3 (E = 6), several query/key blocks in the second
ATTN_GRADCHECK_CASE({"sdpa_fused_packed", "2 heads, causal + key lengths", {{2, 5, 18}},
                     [](const T& x) {
                       FusedOptions o;
                       o.scale = 0.6f;
                       o.mask.causal = true;
                       o.mask.key_lengths = Tensor::from({4.0f, 5.0f}, {2});
                       return sdpa_fused_packed(x[0], 3, o);
                     }});
ATTN_GRADCHECK_CASE({"sdpa_fused_packed", "spans several blocks, dropout 0.2", {{1, 70, 6}},
                     [](const T& x) {
                       FusedOptions o;
                       o.scale = 0.5f;
                       o.dropout = 0.2f;
                       o.seed = 5;
                       return sdpa_fused_packed(x[0], 1, o);
                     }});
// context and weights together (concat), so both outputs' gradients are checked
ATTN_GRADCHECK_CASE({"additive_step", "lengths 4 and 2, context and weights",
                     {{2, 3}, {2, 4, 5}, {2, 4, 3}, {5, 3}, {5}},
                     [](const T& x) {
                       AdditiveStepOutput o = additive_step(x[0], x[1], x[2], x[3], x[4], Tensor::from({4.0f, 2.0f}, {2}));
                       return concat({o.context, o.weights}, 1);
                     }});
ATTN_GRADCHECK_CASE({"additive_step", "attention size 20 (vector path), no lengths",
                     {{2, 3}, {2, 3, 20}, {2, 3, 2}, {20, 3}, {20}},
                     [](const T& x) {
                       AdditiveStepOutput o = additive_step(x[0], x[1], x[2], x[3], x[4]);
                       return concat({o.context, o.weights}, 1);
                     }});

ATTN_GRADCHECK_CASE({"additive_scores", "heads, A = 19 (vector + tail lanes)", {{2, 2, 3, 19}, {2, 2, 4, 19}, {19}},
                     [](const T& x) { return fused_additive_scores(x[0], x[1], x[2]); }});
ATTN_GRADCHECK_CASE({"additive_scores", "through a masked softmax (zero upstream gradients skipped)",
                     {{1, 1, 3, 5}, {1, 1, 4, 5}, {5}},
                     [](const T& x) {
                       Tensor keep = Tensor::from({1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 1}, {1, 1, 3, 4});
                       return softmax(fused_additive_scores(x[0], x[1], x[2]), -1, keep);
                     }});

}  // namespace
}  // namespace attn::testing::gradcheck_attention_test
