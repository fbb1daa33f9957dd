// The fused SDPA kernel and the materialising path (scores -> softmax ->
// weights @ v) against a double-precision loop (attention_reference.h) that
// writes the masks and the dropout hash out from their definitions, forward
// and all gradients, on a table of shapes and masks including odd sizes,
// length 1, lengths 0 and fully masked rows, causal, and dropout. (The two
// kernels share the dropout hash and the mask code: compared with each other
// only, a bug there would not show.)
#include <gtest/gtest.h>

#include <cmath>

#include "attn/attention/attention.h"
#include "attn/cpu/threading.h"
#include "attention_reference.h"
#include "oracle.h"

namespace attn::testing::attention_fused_test {
namespace {
using namespace attn::attention;

struct FusedCase {
  const char* label;
  int64_t B, H, Lq, Lk, D, Dv;
  bool causal = false;
  bool lengths = false;    // random key lengths (one of them 0 when B > 1)
  int keep = 0;            // 0 none, 1 [B, 1, 1, Lk], 2 [B, H, Lq, Lk] with a fully masked row, 3 [Lq, Lk]
  float dropout = 0.0f;
  float shift = 0.0f;  // adds `shift` to every score (through feature 0 of q and k)
  float amp = 1.0f;    // q, k ~ N(0, amp^2): scores ~ N(0, amp^4)
  double tol = 2e-3;
};

const FusedCase kCases[] = {
    {"all length 1", 1, 1, 1, 1, 1, 1},
    {"small odd", 2, 3, 5, 7, 3, 5},
    {"one query, many keys", 2, 2, 1, 300, 16, 16},
    {"many queries, one key", 1, 2, 130, 1, 16, 8},
    {"block edges 64/128", 1, 2, 64, 128, 64, 64},
    {"odd lengths across blocks", 2, 2, 67, 131, 64, 64},
    {"odd head dims", 1, 3, 70, 90, 20, 12},
    {"causal square", 2, 2, 150, 150, 32, 32, true},
    {"causal rectangular", 1, 2, 100, 260, 16, 24, true},
    {"key lengths incl. 0", 3, 2, 40, 200, 16, 16, false, true},
    {"padding mask [B,1,1,Lk]", 2, 2, 33, 140, 16, 16, false, false, 1},
    {"full mask with a fully masked row", 2, 2, 70, 45, 8, 8, false, false, 2},
    {"2-D mask + causal + lengths", 2, 2, 66, 66, 16, 16, true, true, 3},
    {"dropout 0.25", 2, 2, 50, 150, 16, 16, false, false, 0, 0.25f},
    {"dropout + causal + lengths", 2, 1, 90, 90, 32, 32, true, true, 0, 0.4f},
    // queries <= 32 run in 32-lane blocks
    {"short: causal + lengths", 2, 2, 32, 32, 16, 16, true, true},
    {"short: 2-D mask + dropout", 2, 2, 29, 70, 16, 24, false, false, 2, 0.3f},
    {"short: padding mask + causal", 2, 2, 17, 17, 8, 8, true, false, 1},
    {"33 queries: 64-lane block", 1, 2, 33, 33, 16, 16, true},
    // one (b, h) and two threads: the backward splits the keys into ranges and sums dQ partials
    {"one head: key ranges", 1, 1, 100, 300, 32, 48, false, true, 2, 0.2f},
    {"one head: key ranges, causal", 1, 1, 200, 200, 64, 64, true},
    // scores far from 0: a softmax without max-subtraction overflows (exp(89) = inf in float)
    // or underflows to 0 / 0. A float score near 1e3 carries ~3e-4 of rounding (ulp 6e-5 per
    // term of q . k), and so the weights relative: ~6e-3 against the 1e-2 floor.
    {"scores shifted by +1e3", 2, 2, 70, 90, 16, 16, false, true, 0, 0.0f, 1e3f, 1.0f, 2e-2},
    {"scores shifted by -1e3, causal, dropout", 1, 2, 40, 130, 32, 16, true, false, 1, 0.2f, -1e3f, 1.0f, 2e-2},
    {"short: scores shifted by +1e3", 2, 1, 20, 50, 8, 8, false, false, 2, 0.0f, 1e3f, 1.0f, 2e-2},
    {"scores spread over +-1e4", 2, 2, 70, 90, 16, 16, false, true, 0, 0.0f, 0.0f, 50.0f, 1e-2},
};

Tensor grad_or_zero(const Tensor& t) { return t.grad().defined() ? t.grad() : Tensor::zeros(t.shape()); }

// As EXPECT_CLOSE (NaN-strict, compare.h), but a reference that is zero by symmetry (with one visible
// key, softmax is constant 1 and dq = dk = 0 exactly) is judged against an
// absolute floor of 1e-2 instead of its own (zero) scale: there the fused
// backward's dS = P (dP - dO.O) is a difference of two float32 sums of the same
// value, ~1e-6 per row, and dk sums it over up to 150 rows (seen: 4.2e-6 where
// the exact value, and the materialised path's, is 0). A wrong gradient is off by O(1).
#define EXPECT_NEAR_REF(a, b, tol, what) EXPECT_REL_CLOSE((a), (b), (tol), 1e-2, 1e-2, (what))

class FusedVsMaterialized : public ::testing::TestWithParam<FusedCase> {};

TEST_P(FusedVsMaterialized, OutputAndGradients) {
  const FusedCase& c = GetParam();
  // two threads whatever the machine, so one (b, h) splits its keys into ranges
  const int saved_threads = num_threads();
  set_num_threads(2);
  struct Restore {
    int n;
    ~Restore() { attn::set_num_threads(n); }
  } restore{saved_threads};
  Rng rng(1234 + c.Lq * 7 + c.Lk);
  Tensor q = randn({c.B, c.H, c.Lq, c.D}, rng, c.amp), k = randn({c.B, c.H, c.Lk, c.D}, rng, c.amp),
         v = randn({c.B, c.H, c.Lk, c.Dv}, rng);
  if (c.shift != 0.0f) {  // q_i0 k_j0 / sqrt(D) = shift for every (i, j)
    const float a = std::sqrt(std::fabs(c.shift) * std::sqrt(float(c.D)));
    for (int64_t i = 0; i < q.numel(); i += c.D) q.data()[i] = a;
    for (int64_t j = 0; j < k.numel(); j += c.D) k.data()[j] = c.shift > 0 ? a : -a;
  }
  AttentionOptions opt;
  opt.mask.causal = c.causal;
  if (c.lengths) {
    opt.mask.key_lengths = Tensor::empty({c.B});
    for (int64_t b = 0; b < c.B; ++b) opt.mask.key_lengths.data()[b] = b == 1 ? 0.0f : float(1 + rng.below(c.Lk));
  }
  if (c.keep == 1) {
    opt.mask.keep = Tensor::empty({c.B, 1, 1, c.Lk});
    for (int64_t i = 0; i < opt.mask.keep.numel(); ++i) opt.mask.keep.data()[i] = rng.uniform() < 0.3f ? 0.0f : 1.0f;
  } else if (c.keep == 2) {
    opt.mask.keep = Tensor::empty({c.B, c.H, c.Lq, c.Lk});
    for (int64_t i = 0; i < opt.mask.keep.numel(); ++i) opt.mask.keep.data()[i] = rng.uniform() < 0.5f ? 0.0f : 1.0f;
    for (int64_t j = 0; j < c.Lk; ++j) opt.mask.keep.data()[3 * c.Lk + j] = 0.0f;  // row 3 of head 0 sees nothing
  } else if (c.keep == 3) {
    opt.mask.keep = Tensor::empty({c.Lq, c.Lk});
    for (int64_t i = 0; i < opt.mask.keep.numel(); ++i) opt.mask.keep.data()[i] = rng.uniform() < 0.2f ? 0.0f : 1.0f;
  }
  opt.dropout = c.dropout;
  opt.training = c.dropout > 0.0f;
  Tensor seed_grad = randn({c.B, c.H, c.Lq, c.Dv}, rng);

  auto run = [&](Kernel kernel, Tensor& dq, Tensor& dk, Tensor& dv) {
    Tensor qq = q.clone().set_requires_grad(), kk = k.clone().set_requires_grad(), vv = v.clone().set_requires_grad();
    Rng drop_rng(99);  // same dropout seed for both paths
    AttentionOptions o = opt;
    o.rng = &drop_rng;
    o.kernel = kernel;
    Tensor out = scaled_dot_product_attention(qq, kk, vv, o).context;
    backward(out, seed_grad);
    dq = grad_or_zero(qq), dk = grad_or_zero(kk), dv = grad_or_zero(vv);
    return out;
  };
  // both kernels against the double loop, which shares neither their mask nor their dropout code
  SdpaMask ref_mask;
  for (int64_t b = 0; c.lengths && b < c.B; ++b) ref_mask.key_lengths.push_back(int64_t(opt.mask.key_lengths.data()[b]));
  ref_mask.causal = c.causal;
  ref_mask.keep = opt.mask.keep;
  const uint64_t seed = Rng(99).next_u64();  // what attention() draws from drop_rng
  const SdpaReference ref =
      sdpa_reference(q, k, v, 1.0 / std::sqrt(double(c.D)), ref_mask, c.dropout, seed, seed_grad);
  for (Kernel kernel : {Kernel::Fused, Kernel::Materialized}) {
    SCOPED_TRACE(kernel == Kernel::Fused ? "fused" : "materialised");
    Tensor dq, dk, dv;
    Tensor out = run(kernel, dq, dk, dv);
    EXPECT_NEAR_REF(out, ref.out, c.tol, "context");
    EXPECT_NEAR_REF(dq, ref.dq, c.tol, "dq");
    EXPECT_NEAR_REF(dk, ref.dk, c.tol, "dk");
    EXPECT_NEAR_REF(dv, ref.dv, c.tol, "dv");
  }
  // the checks above must be able to fail: outputs are not all zero unless every key is hidden
  double mag = 0;
  for (int64_t i = 0; i < ref.out.numel(); ++i) mag += std::fabs(ref.out.data()[i]);
  EXPECT_GT(mag, 0.0);
}

std::string case_name(const ::testing::TestParamInfo<FusedCase>& info) {
  std::string s = info.param.label;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Table, FusedVsMaterialized, ::testing::ValuesIn(kCases), case_name);

// Random shapes and masks, drawn once from a fixed seed (the same cases every
// run): lengths 1-150 on either side, head dims 1-80, every mask kind, dropout.
std::vector<FusedCase> random_cases() {
  static std::vector<std::string> labels;  // FusedCase keeps a const char*
  Rng rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng.below(uint64_t(hi - lo + 1))); };
  std::vector<FusedCase> v;
  const int n = 16;
  labels.reserve(n);
  for (int i = 0; i < n; ++i) {
    FusedCase c{};
    c.B = pick(1, 3), c.H = pick(1, 3), c.Lq = pick(1, 150), c.Lk = pick(1, 150), c.D = pick(1, 80),
    c.Dv = pick(1, 80);
    c.causal = rng.uniform() < 0.3f;
    c.lengths = rng.uniform() < 0.4f;
    c.keep = int(pick(0, 3));
    c.dropout = rng.uniform() < 0.25f ? 0.2f : 0.0f;
    labels.push_back("random " + std::to_string(i) + ": B" + std::to_string(c.B) + " H" + std::to_string(c.H) + " Lq" +
                     std::to_string(c.Lq) + " Lk" + std::to_string(c.Lk) + " D" + std::to_string(c.D) + " Dv" +
                     std::to_string(c.Dv) + (c.causal ? " causal" : "") + (c.lengths ? " lengths" : "") + " keep" +
                     std::to_string(c.keep) + (c.dropout > 0 ? " dropout" : ""));
    c.label = labels.back().c_str();
    v.push_back(c);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Random, FusedVsMaterialized, ::testing::ValuesIn(random_cases()), case_name);

// Dot and General scores run through the fused kernel too (General as (q W) . k):
// same context and gradients (W included) as their materialised path.
TEST(FusedAttention, DotAndGeneralScoresMatchMaterialized) {
  Rng rng(8);
  Tensor q = randn({2, 2, 37, 6}, rng), k = randn({2, 2, 70, 5}, rng), v = randn({2, 2, 70, 4}, rng);
  Tensor W = randn({6, 5}, rng, 0.4f), seed = randn({2, 2, 37, 4}, rng);
  Tensor k6 = randn({2, 2, 70, 6}, rng);
  for (int general = 0; general < 2; ++general) {
    SCOPED_TRACE(general ? "general" : "dot");
    std::vector<Tensor> grads[2];
    Tensor outs[2];
    for (int m = 0; m < 2; ++m) {
      Tensor qq = q.clone().set_requires_grad(), kk = (general ? k : k6).clone().set_requires_grad(),
             vv = v.clone().set_requires_grad(), ww = W.clone().set_requires_grad();
      AttentionOptions o;
      o.kernel = m ? Kernel::Materialized : Kernel::Fused;
      o.mask.causal = true;
      o.mask.key_lengths = Tensor::from({70.0f, 20.0f}, {2});
      Score s = general ? Score(General{ww}) : Score(Dot{});
      outs[m] = attention::attention(qq, kk, vv, s, o).context;
      backward(outs[m], seed);
      grads[m] = {grad_or_zero(qq), grad_or_zero(kk), grad_or_zero(vv), grad_or_zero(ww)};
    }
    EXPECT_NEAR_REF(outs[0], outs[1], 2e-3, "context");
    for (int i = 0; i < 4; ++i) EXPECT_NEAR_REF(grads[0][i], grads[1][i], 2e-3, "gradient " + std::to_string(i));
  }
}

// A row that sees no key: zeros out, zero gradients, no NaN anywhere.
TEST(FusedAttention, FullyMaskedRowsGiveZerosAndZeroGradients) {
  Rng rng(5);
  Tensor q = randn({2, 1, 9, 8}, rng).set_requires_grad(), k = randn({2, 1, 11, 8}, rng).set_requires_grad(),
         v = randn({2, 1, 11, 8}, rng).set_requires_grad();
  FusedOptions f;
  f.scale = 0.3f;
  f.mask.key_lengths = Tensor::from({0.0f, 11.0f}, {2});  // batch 0 sees nothing
  Tensor out = sdpa_fused(q, k, v, f);
  backward(out, randn(out.shape(), rng));
  for (int64_t i = 0; i < 9 * 8; ++i) {
    EXPECT_EQ(out.data()[i], 0.0f);
    EXPECT_EQ(q.grad().data()[i], 0.0f);
  }
  for (int64_t i = 0; i < 11 * 8; ++i) {
    EXPECT_EQ(k.grad().data()[i], 0.0f);
    EXPECT_EQ(v.grad().data()[i], 0.0f);
  }
  for (int64_t i = 0; i < out.numel(); ++i) EXPECT_TRUE(std::isfinite(out.data()[i]));
  for (int64_t i = 0; i < q.grad().numel(); ++i) EXPECT_TRUE(std::isfinite(q.grad().data()[i]));
}

// Dropout actually drops: about p of the weights, differently per seed, and
// exactly the weights that attention_reference.h's hash drops.
TEST(FusedAttention, DropoutPatternRate) {
  Tensor m = dropout_keep_mask(42, 0.3f, 2, 2, 64, 256);
  int64_t dropped = 0;
  for (int64_t i = 0; i < m.numel(); ++i) dropped += m.data()[i] == 0.0f;
  EXPECT_NEAR(double(dropped) / double(m.numel()), 0.3, 0.01);
  Tensor m2 = dropout_keep_mask(43, 0.3f, 2, 2, 64, 256);
  int64_t same = 0;
  for (int64_t i = 0; i < m.numel(); ++i) same += m.data()[i] == m2.data()[i];
  EXPECT_LT(double(same) / double(m.numel()), 0.7);
  // element by element the pattern of the definition (a seed with high bits too)
  for (uint64_t seed : {uint64_t(42), uint64_t(0x9e3779b97f4a7c15ull)}) {
    Tensor p = dropout_keep_mask(seed, 0.3f, 2, 3, 5, 70);
    for (int64_t i = 0; i < p.numel(); ++i)
      ASSERT_EQ(p.data()[i], reference_dropout_keeps(seed, 0.3f, i / 70, i % 70) ? 1.0f / 0.7f : 0.0f) << i;
  }
}

TEST(FusedAttention, RejectsBadShapes) {
  Rng rng(1);
  Tensor q = randn({1, 2, 3, 4}, rng), k = randn({1, 2, 5, 4}, rng), v = randn({1, 2, 6, 4}, rng);
  EXPECT_THROW(sdpa_fused(q, k, v, {}), std::invalid_argument);  // k, v lengths differ
  Tensor v2 = randn({1, 2, 5, 4}, rng);
  FusedOptions f;
  f.mask.key_lengths = Tensor::from({6.0f}, {1});  // longer than Lk
  EXPECT_THROW(sdpa_fused(q, k, v2, f), std::invalid_argument);
  for (float bad : {-1.0f, 2.5f}) {
    f.mask.key_lengths = Tensor::from({bad}, {1});
    EXPECT_THROW(sdpa_fused(q, k, v2, f), std::invalid_argument) << bad;
  }
  for (float fine : {5.0f, 0.0f}) {  // Lk and 0: the ends of [0, Lk]
    f.mask.key_lengths = Tensor::from({fine}, {1});
    EXPECT_NO_THROW(sdpa_fused(q, k, v2, f)) << fine;
  }
  f.mask.key_lengths = Tensor();
  f.mask.keep = Tensor::ones({3, 5, 5});  // does not broadcast
  EXPECT_THROW(sdpa_fused(q, k, v2, f), std::invalid_argument);
  AttentionOptions o;
  o.need_weights = true;
  o.kernel = Kernel::Fused;
  EXPECT_THROW(scaled_dot_product_attention(q, k, v2, o), std::invalid_argument);
}

}  // namespace
}  // namespace attn::testing::attention_fused_test
