// Run-time instruction-set dispatch (cpu/isa.h, cpu/dispatch.h): the cap, and
// every build of each dispatched kernel that this CPU can run, called directly
// by its namespace, against a plain reference on the same data. The whole
// suite also runs under each cap (ATTN_ISA=scalar|avx2|avx512 ctest, README).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/nn/rnn_kernels.h"
#include "attn/nn/rows_gemm.h"
#include "attn/tensor/random.h"
#include "compare.h"

using namespace attn;
using attn::testing::compare;

namespace {

std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (i <= cpu::detected_isa()) out.push_back(i);
  return out;
}

std::vector<float> random_vec(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = rng.normal();
  return v;
}

TEST(IsaDispatch, NamesParseAndTheCapNeverRaises) {
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    EXPECT_EQ(cpu::parse_isa(cpu::isa_name(i), "test"), i);
  try {
    cpu::parse_isa("sse9", "ATTN_ISA");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ATTN_ISA: unknown instruction set 'sse9'"), std::string::npos) << e.what();
  }
  const cpu::Isa before = cpu::isa();
  EXPECT_LE(before, cpu::detected_isa());
  cpu::set_isa_cap(cpu::Isa::scalar);
  EXPECT_EQ(cpu::isa(), cpu::Isa::scalar);
  cpu::set_isa_cap(cpu::Isa::avx512);  // a cap above the CPU gives the CPU's level
  EXPECT_EQ(cpu::isa(), cpu::detected_isa());
  cpu::set_isa_cap(before);
  EXPECT_EQ(cpu::isa(), before);
}

// ATTN_ISA, when the suite runs under a cap, is what isa() reports
TEST(IsaDispatch, EnvironmentCapIsHonoured) {
  const char* env = std::getenv("ATTN_ISA");
  if (!env) GTEST_SKIP() << "ATTN_ISA not set";
  cpu::Isa cap = cpu::parse_isa(env, "ATTN_ISA");
  EXPECT_EQ(cpu::isa(), cap < cpu::detected_isa() ? cap : cpu::detected_isa());
}

// rows_gemm::gemm_wt of every build: C = A W^T over an output window, with and
// without accumulation, rows past kMaxRows and K not a multiple of any width
TEST(IsaDispatch, RowsGemmEveryBuildMatchesTheReference) {
  Rng rng(5);
  const int64_t m = 11, K = 77, O = 45, o0 = 3, o1 = 41;
  std::vector<float> a = random_vec(m * K, rng), w = random_vec(O * K, rng), c0 = random_vec(m * O, rng);
  for (bool acc : {false, true}) {
    std::vector<float> ref = c0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t o = o0; o < o1; ++o) {
        double s = acc ? ref[size_t(i * O + o)] : 0.0;
        for (int64_t k = 0; k < K; ++k) s += double(a[size_t(i * K + k)]) * w[size_t(o * K + k)];
        ref[size_t(i * O + o)] = float(s);
      }
    for (cpu::Isa isa : runnable_isas()) {
      std::vector<float> c = c0;
      auto fn = isa == cpu::Isa::avx512 ? rows_gemm::avx512::gemm_wt
                : isa == cpu::Isa::avx2 ? rows_gemm::avx2::gemm_wt
                                        : rows_gemm::scalar::gemm_wt;
      fn(m, K, a.data(), K, w.data(), K, o0, o1, c.data(), O, acc);
      EXPECT_LE(compare(c, ref, 1e-5, 1e-5).max_abs, 2e-5) << cpu::isa_name(isa) << " accumulate=" << acc;
    }
  }
}

// rnn_kernels::gru_forward of every build (fast math) against the exact
// reference build on the same inputs
TEST(IsaDispatch, GruGatesEveryBuildMatchesTheExactKernel) {
  Rng rng(6);
  const int64_t n = 5, H = 37;
  std::vector<float> gx = random_vec(n * 3 * H, rng), gh = random_vec(n * 3 * H, rng), bi = random_vec(3 * H, rng),
                     bh = random_vec(3 * H, rng), hp = random_vec(n * H, rng);
  auto run = [&](auto fn, rnn_kernels::Math math) {
    std::vector<float> gates = gx, ghn(size_t(n * H)), y(size_t(n * H)), next(size_t(n * H));
    std::vector<float*> yr, nr;
    for (int64_t j = 0; j < n; ++j) yr.push_back(y.data() + j * H), nr.push_back(next.data() + j * H);
    rnn_kernels::GruForward f;
    f.n = n, f.hidden = H, f.k_begin = 0, f.k_end = H, f.gates = gates.data(), f.gh = gh.data(), f.b_ih = bi.data(),
    f.b_hh = bh.data(), f.h_prev = hp.data(), f.ghn = ghn.data(), f.y_rows = yr.data(), f.next_rows = nr.data();
    fn(f, math);
    return y;
  };
  std::vector<float> ref = run(rnn_kernels::scalar::gru_forward, rnn_kernels::Math::Exact);
  for (cpu::Isa isa : runnable_isas()) {
    auto fn = isa == cpu::Isa::avx512 ? rnn_kernels::avx512::gru_forward
              : isa == cpu::Isa::avx2 ? rnn_kernels::avx2::gru_forward
                                      : rnn_kernels::scalar::gru_forward;
    EXPECT_LE(compare(run(fn, rnn_kernels::Math::Fast), ref, 1e-6, 1e-6).max_abs, 1e-6) << cpu::isa_name(isa);
  }
}

}  // namespace

// ---- the attention kernels ----
// Every build of each kernel against the double loops of attention_reference.h
// (or one written here), on shapes with a tail in every vector loop. Scratch
// memory comes filled with NaN: a kernel that reads scratch it did not write
// shows it. Tolerances: float accumulation against double, the same for every
// build (tests/test_attention_fused.cpp and test_attention_reference.cpp use them).
#include "attention_reference.h"
#include "attn/attention/additive_scores_kernels.h"
#include "attn/attention/additive_step_kernels.h"
#include "attn/attention/flash_kernels.h"
#include "attn/tensor/threading.h"

namespace {

using attn::testing::AdditiveReference;
using attn::testing::SdpaMask;
using attn::testing::SdpaReference;
namespace flash = attn::attention::flash;

// A kernel's scratch from a vector, handed out full of NaN
attention::KernelScratch nan_scratch(std::vector<float>& buf) {
  return {[](void* ctx, int64_t floats) -> float* {
            auto* v = static_cast<std::vector<float>*>(ctx);
            v->assign(size_t(floats), std::nanf(""));
            return v->data();
          },
          &buf};
}

std::vector<float> to_vec(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.numel()); }

struct FlashCase {
  const char* label;
  int64_t B, H, Lq, Lk, D, Dv;
  bool causal = false;
  bool lengths = false;  // key lengths, one of them 0 when B > 1
  int keep = 0;          // 0 none, 1 [B, 1, 1, Lk], 2 [B, H, Lq, Lk] with a fully masked row
  float dropout = 0.0f;
  bool packed = false;  // q, k, v inside one [B, L, 3, H, D] buffer (strided rows; Lq = Lk, D = Dv)
};

const FlashCase kFlashCases[] = {
    // 32-lane query blocks; D, Dv, Lk not multiples of any vector width (padded row copies)
    {"short, padding mask, dropout", 2, 2, 29, 70, 20, 12, false, false, 1, 0.3f},
    // 64-lane blocks with a partial last block, causal, a row of length 0
    {"causal, lengths", 2, 1, 67, 131, 16, 24, true, true},
    // D = 64: Q and dO rows used in place; a query that sees no key
    {"full mask, in place", 1, 2, 70, 45, 64, 64, false, false, 2},
    // one (b, h) on two threads: key ranges and the dQ partial sums
    {"one head, key ranges, dropout", 1, 1, 130, 200, 32, 48, false, true, 0, 0.2f},
    // the kernel reading strided keys and values itself (the glue copies them first)
    {"packed heads, causal", 2, 2, 40, 40, 8, 8, true, false, 0, 0.0f, true},
};

// contiguous [B, H, L, W] <-> the element (b, h, i, d) at l.sb b + l.sh h + l.si i + d of buf
void scatter(const float* src, int64_t B, int64_t H, int64_t L, int64_t W, flash::Layout l, float* buf) {
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < W; ++d) buf[(bh / H) * l.sb + (bh % H) * l.sh + i * l.si + d] = src[(bh * L + i) * W + d];
}
std::vector<float> gather(const float* buf, int64_t B, int64_t H, int64_t L, int64_t W, flash::Layout l) {
  std::vector<float> out(size_t(B * H * L * W));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < W; ++d)
        out[size_t((bh * L + i) * W + d)] = buf[(bh / H) * l.sb + (bh % H) * l.sh + i * l.si + d];
  return out;
}

// flash::kernels forward and backward of every build against sdpa_reference
TEST(IsaDispatch, FlashEveryBuildMatchesTheReference) {
  const int saved_threads = num_threads();
  set_num_threads(2);  // one (b, h) splits its keys into ranges
  for (const FlashCase& c : kFlashCases) {
    SCOPED_TRACE(c.label);
    Rng rng(31 + uint64_t(c.Lq));
    Tensor q = randn({c.B, c.H, c.Lq, c.D}, rng), k = randn({c.B, c.H, c.Lk, c.D}, rng),
           v = randn({c.B, c.H, c.Lk, c.Dv}, rng), dout = randn({c.B, c.H, c.Lq, c.Dv}, rng);
    SdpaMask mask;
    mask.causal = c.causal;
    std::vector<float> lengths;
    for (int64_t b = 0; c.lengths && b < c.B; ++b) {
      lengths.push_back(b == 1 ? 0.0f : float(1 + rng.below(uint64_t(c.Lk))));
      mask.key_lengths.push_back(int64_t(lengths.back()));
    }
    if (c.keep == 1) mask.keep = Tensor::empty({c.B, 1, 1, c.Lk});
    if (c.keep == 2) mask.keep = Tensor::empty({c.B, c.H, c.Lq, c.Lk});
    for (int64_t i = 0; c.keep && i < mask.keep.numel(); ++i) mask.keep.data()[i] = rng.uniform() < 0.3f ? 0.0f : 1.0f;
    if (c.keep == 2)
      for (int64_t j = 0; j < c.Lk; ++j) mask.keep.data()[3 * c.Lk + j] = 0.0f;  // row 3 sees nothing
    const uint64_t seed = 4242;
    const float scale = 1.0f / std::sqrt(float(c.D));
    const SdpaReference ref = attn::testing::sdpa_reference(q, k, v, scale, mask, c.dropout, seed, dout);

    flash::Problem p;
    p.B = c.B, p.H = c.H, p.Lq = c.Lq, p.Lk = c.Lk, p.D = c.D, p.Dv = c.Dv, p.scale = scale;
    p.causal = c.causal, p.dropout = c.dropout, p.seed = seed;
    p.key_lengths = c.lengths ? lengths.data() : nullptr;
    if (c.keep) {
      p.mask = mask.keep.data();
      p.mask_sb = c.keep == 1 ? c.Lk : c.H * c.Lq * c.Lk, p.mask_sh = c.keep == 1 ? 0 : c.Lq * c.Lk;
      p.mask_si = c.keep == 1 ? 0 : c.Lk, p.mask_sj = 1;
    }
    const int64_t E = c.H * c.D, L = c.Lq;
    std::vector<float> in, gin;  // q, k, v (and their gradients) in one buffer each
    if (c.packed) {
      p.lq = p.lk = p.lv = {L * 3 * E, c.D, 3 * E};
      p.lo = {L * E, c.D, E};
      in.resize(size_t(c.B * L * 3 * E));
      scatter(q.data(), c.B, c.H, L, c.D, p.lq, in.data());
      scatter(k.data(), c.B, c.H, L, c.D, p.lk, in.data() + E);
      scatter(v.data(), c.B, c.H, L, c.D, p.lv, in.data() + 2 * E);
    } else {
      flash::set_contiguous(p);
      in = to_vec(q);
      for (const Tensor& t : {k, v}) in.insert(in.end(), t.data(), t.data() + t.numel());
    }
    const int64_t k_at = c.packed ? E : q.numel(), v_at = c.packed ? 2 * E : q.numel() + k.numel();
    p.q = in.data(), p.k = in.data() + k_at, p.v = in.data() + v_at;
    std::vector<float> dO(size_t(c.B * c.H * c.Lq * c.Dv));
    scatter(dout.data(), c.B, c.H, c.Lq, c.Dv, p.lo, dO.data());

    for (cpu::Isa isa : runnable_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      auto fwd = isa == cpu::Isa::avx512 ? flash::kernels::avx512::forward
                 : isa == cpu::Isa::avx2 ? flash::kernels::avx2::forward
                                         : flash::kernels::scalar::forward;
      auto bwd = isa == cpu::Isa::avx512 ? flash::kernels::avx512::backward
                 : isa == cpu::Isa::avx2 ? flash::kernels::avx2::backward
                                         : flash::kernels::scalar::backward;
      std::vector<float> out(dO.size(), std::nanf("")), lse(size_t(c.B * c.H * c.Lq)), scratch;
      std::vector<float> grads(in.size(), std::nanf(""));  // every element of the three views is written
      fwd(p, out.data(), lse.data(), nan_scratch(scratch));
      bwd(p, p.lk, p.lv, out.data(), dO.data(), lse.data(), grads.data(), grads.data() + k_at, grads.data() + v_at,
          nan_scratch(scratch));
      const std::vector<float> got[] = {gather(out.data(), c.B, c.H, c.Lq, c.Dv, p.lo),
                                        gather(grads.data(), c.B, c.H, c.Lq, c.D, p.lq),
                                        gather(grads.data() + k_at, c.B, c.H, c.Lk, c.D, p.lk),
                                        gather(grads.data() + v_at, c.B, c.H, c.Lk, c.Dv, p.lv)};
      const Tensor* want[] = {&ref.out, &ref.dq, &ref.dk, &ref.dv};
      const char* names[] = {"out", "dq", "dk", "dv"};
      for (int i = 0; i < 4; ++i)  // as test_attention_fused.cpp: 2e-3 relative, floor 1e-2 of the scale
        EXPECT_REL_CLOSE(got[i], to_vec(*want[i]), 2e-3, 1e-2, 1e-2, names[i]);
    }
  }
  set_num_threads(saved_threads);
}

// simd::kLanes of each build
int lanes_of(cpu::Isa isa) { return isa == cpu::Isa::avx512 ? 16 : isa == cpu::Isa::avx2 ? 8 : 1; }

using StepFwd = void (*)(const attention::additive_step_kernels::Forward&);
using StepBwd = void (*)(const attention::additive_step_kernels::Backward&);
using StepProj = bool (*)(int64_t, int64_t, int64_t, const float*, const float*, float*,
                          const attention::KernelScratch&);
struct StepBuild {
  StepProj project_query;
  StepFwd forward;
  StepBwd backward;
};
StepBuild step_build(cpu::Isa isa) {
  namespace k = attention::additive_step_kernels;
  if (isa == cpu::Isa::avx512) return {k::avx512::project_query, k::avx512::forward, k::avx512::backward};
  if (isa == cpu::Isa::avx2) return {k::avx2::project_query, k::avx2::forward, k::avx2::backward};
  return {k::scalar::project_query, k::scalar::forward, k::scalar::backward};
}

// additive_step_kernels::project_query of every build: the register tile for
// kLanes <= B <= 128 (against a double product), false (nothing written) otherwise
TEST(IsaDispatch, AdditiveStepQueryProjectionEveryBuild) {
  Rng rng(12);
  const int64_t Qd = 37, A = 45;  // tails in both transposes' 8 x 8 blocks
  const std::vector<float> W1 = random_vec(A * Qd, rng);
  for (int64_t B : {1, 7, 13, 64, 128, 129}) {
    const std::vector<float> query = random_vec(B * Qd, rng);
    std::vector<float> ref(size_t(B * A));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t a = 0; a < A; ++a) {
        double s = 0;
        for (int64_t i = 0; i < Qd; ++i) s += double(query[size_t(b * Qd + i)]) * W1[size_t(a * Qd + i)];
        ref[size_t(b * A + a)] = float(s);
      }
    for (cpu::Isa isa : runnable_isas()) {
      std::vector<float> qp(size_t(B * A), std::nanf("")), scratch;
      const bool tiled =
          step_build(isa).project_query(B, Qd, A, query.data(), W1.data(), qp.data(), nan_scratch(scratch));
      EXPECT_EQ(tiled, B >= lanes_of(isa) && B <= 128) << cpu::isa_name(isa) << " B=" << B;
      if (tiled) {  // braces: EXPECT_LE is an if / else of its own
        EXPECT_LE(compare(qp, ref, 1e-5, 1e-5).max_abs, 2e-5) << cpu::isa_name(isa) << " B=" << B;
      }
    }
  }
}

// additive_step_kernels forward and backward of every build against
// additive_reference with identity projections (W1 = W2 = I, no bias: query is
// qp and keys are kp, so its dquery and dkeys are the kernel's dqp and dkp);
// lengths 13, 0, 1 and random; with both gradients, the context's only, the weights' only
TEST(IsaDispatch, AdditiveStepEveryBuildMatchesTheReference) {
  const int64_t B = 5, Lk = 13, Dv = 9, A = 20;  // A = 20, Dv = 9: vector lanes and a tail
  Rng rng(13);
  Tensor qp = randn({B, A}, rng), kp = randn({B, Lk, A}, rng), values = randn({B, Lk, Dv}, rng), v = randn({A}, rng),
         eye = Tensor::zeros({A, A});
  for (int64_t a = 0; a < A; ++a) eye.data()[a * A + a] = 1.0f;
  std::vector<int64_t> lengths = {Lk, 0, 1, 1 + int64_t(rng.below(Lk)), 1 + int64_t(rng.below(Lk))};
  std::vector<float> len(lengths.begin(), lengths.end());
  const Tensor dctx = randn({B, Dv}, rng), dw = randn({B, Lk}, rng);
  for (int grads = 0; grads < 3; ++grads) {  // 0: both, 1: context only, 2: weights only
    SCOPED_TRACE(grads == 0 ? "both gradients" : grads == 1 ? "context gradient" : "weights gradient");
    const Tensor dc = grads == 2 ? Tensor::zeros({B, Dv}) : dctx, dwt = grads == 1 ? Tensor::zeros({B, Lk}) : dw;
    const AdditiveReference r =
        attn::testing::additive_reference(qp, kp, values, eye, eye, Tensor(), v, lengths, dc, dwt);
    for (cpu::Isa isa : runnable_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      std::vector<float> w(size_t(B * Lk), std::nanf("")), ctx(size_t(B * Dv), std::nanf(""));
      attention::additive_step_kernels::Forward f;
      f.B = B, f.Lk = Lk, f.A = A, f.Dv = Dv, f.qp = qp.data(), f.kp = kp.data(), f.values = values.data();
      f.v = v.data(), f.lengths = len.data(), f.weights = w.data(), f.context = ctx.data();
      step_build(isa).forward(f);
      EXPECT_REL_CLOSE(ctx, to_vec(r.context), 2e-4, 1e-2, 1e-6, "context");
      EXPECT_REL_CLOSE(w, to_vec(r.weights), 2e-4, 1e-2, 1e-6, "weights");

      std::vector<float> dkp(size_t(B * Lk * A), std::nanf("")), dval(size_t(B * Lk * Dv), std::nanf(""));
      std::vector<float> dqp(size_t(B * A), 0.0f), dv_rows(size_t(B * A), 0.0f), da(size_t(B * Lk));
      attention::additive_step_kernels::Backward g;
      g.B = B, g.Lk = Lk, g.A = A, g.Dv = Dv, g.qp = qp.data(), g.kp = kp.data(), g.values = values.data();
      g.v = v.data(), g.lengths = len.data(), g.weights = w.data();
      g.dcontext = grads == 2 ? nullptr : dctx.data(), g.dweights = grads == 1 ? nullptr : dw.data();
      g.dkp = dkp.data(), g.dvalues = dval.data(), g.dqp = dqp.data(), g.dv_rows = dv_rows.data(), g.da = da.data();
      step_build(isa).backward(g);
      std::vector<float> dv(size_t(A), 0.0f);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < A; ++a) dv[size_t(a)] += dv_rows[size_t(b * A + a)];
      EXPECT_REL_CLOSE(dqp, to_vec(r.dquery), 2e-4, 1e-2, 1e-6, "dqp");
      EXPECT_REL_CLOSE(dkp, to_vec(r.dkeys), 2e-4, 1e-2, 1e-6, "dkp");
      EXPECT_REL_CLOSE(dval, to_vec(r.dvalues), 2e-4, 1e-2, 1e-6, "dvalues");
      EXPECT_REL_CLOSE(dv, to_vec(r.dv), 2e-4, 1e-2, 1e-6, "dv");
    }
  }
}

// additive_scores_kernels forward and backward of every build against a double
// loop: e_ij = v^T tanh(qa_i + ka_j); de = 0 on some pairs (skipped by the kernel)
TEST(IsaDispatch, AdditiveScoresEveryBuildMatchesTheReference) {
  const int64_t BH = 3, Lq = 5, Lk = 7, A = 20;
  Rng rng(14);
  const std::vector<float> qa = random_vec(BH * Lq * A, rng), ka = random_vec(BH * Lk * A, rng), v = random_vec(A, rng);
  std::vector<float> de = random_vec(BH * Lq * Lk, rng);
  for (size_t i = 0; i < de.size(); i += 4) de[i] = 0.0f;
  std::vector<double> e_d(de.size()), dqa_d(qa.size()), dka_d(ka.size()), dv_d(size_t(BH * A));
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < Lk; ++j) {
        const int64_t r = bh * Lq + i, kr = bh * Lk + j;
        double s = 0;
        for (int64_t a = 0; a < A; ++a) {
          const double t = std::tanh(double(qa[size_t(r * A + a)]) + ka[size_t(kr * A + a)]);
          const double d = de[size_t(r * Lk + j)], dz = d * v[size_t(a)] * (1.0 - t * t);
          s += v[size_t(a)] * t;
          dqa_d[size_t(r * A + a)] += dz;
          dka_d[size_t(kr * A + a)] += dz;
          dv_d[size_t(bh * A + a)] += d * t;
        }
        e_d[size_t(r * Lk + j)] = s;
      }
  auto to_float = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  const std::vector<float> e_ref = to_float(e_d), dqa_ref = to_float(dqa_d), dka_ref = to_float(dka_d),
                           dv_ref = to_float(dv_d);
  const attention::additive_scores_kernels::Scores s{BH, Lq, Lk, A, qa.data(), ka.data(), v.data()};
  for (cpu::Isa isa : runnable_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    namespace k = attention::additive_scores_kernels;
    auto fwd = isa == cpu::Isa::avx512 ? k::avx512::forward
               : isa == cpu::Isa::avx2 ? k::avx2::forward
                                       : k::scalar::forward;
    auto bwd = isa == cpu::Isa::avx512 ? k::avx512::backward
               : isa == cpu::Isa::avx2 ? k::avx2::backward
                                       : k::scalar::backward;
    std::vector<float> e(de.size(), std::nanf("")), dqa(qa.size(), 0.0f), dka(ka.size(), 0.0f), dv(dv_ref.size(), 0.0f);
    fwd(s, e.data());
    bwd(s, de.data(), dqa.data(), dka.data(), dv.data());
    EXPECT_REL_CLOSE(e, e_ref, 2e-4, 1e-2, 1e-6, "e");
    EXPECT_REL_CLOSE(dqa, dqa_ref, 2e-4, 1e-2, 1e-6, "dqa");
    EXPECT_REL_CLOSE(dka, dka_ref, 2e-4, 1e-2, 1e-6, "dka");
    EXPECT_REL_CLOSE(dv, dv_ref, 2e-4, 1e-2, 1e-6, "dv");
  }
}

}  // namespace
