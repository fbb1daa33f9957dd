// Optimizers and gradient clipping: parity with torch.optim / clip_grad_norm_
// (tests/oracle/optim.py) and the state import/export the checkpoints rely on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "attn/train/clip_grad.h"
#include "attn/train/optim.h"
#include "attn/train/seed.h"
#include "oracle.h"
#include "train_test_util.h"

using namespace attn;
using attn::testing::bit_equal;
using attn::testing::run_oracle;

namespace {

// Sets p.grad to a copy of g (what a backward pass would leave there).
void set_grad(const Tensor& p, const Tensor& g) { p.impl()->grad = g.clone().impl_ptr(); }

// Fresh leaf parameters from the oracle's init.<name> entries, in file order.
nn::NamedTensors params_from(const SafetensorsFile& f) {
  nn::NamedTensors ps;
  for (const auto& [name, t] : f.tensors)
    if (name.rfind("init.", 0) == 0) ps.emplace_back(name.substr(5), t.clone().set_requires_grad());
  return ps;
}

const Tensor* find(const nn::NamedTensors& ts, const std::string& name) {
  for (const auto& [n, t] : ts)
    if (n == name) return &t;
  return nullptr;
}

// EXPECT_NORMWISE_CLOSE (compare.h), max |a - b| / max |b|: the error relative
// to the tensor's scale. Elementwise relative error is the wrong yardstick
// here: an element that cancels to near zero (a momentum buffer of 0.0025
// built from +-1 gradients) carries the absolute rounding error of the O(1)
// terms it came from, ~1e-7, which is 4e-5 of itself, however the update is
// written; fp32 rounding order (fused multiply-add or not) differs between
// torch's kernels and ours.

int64_t decode_count(const Tensor& t) { return int64_t(t.data()[0]) * (int64_t(1) << 24) + int64_t(t.data()[1]); }

using MakeOptimizer = std::function<std::unique_ptr<train::Optimizer>(nn::NamedTensors)>;

struct OptimCase {
  const char* name;
  const char* oracle_args;  // optim.py KIND key=value...
  MakeOptimizer make;
  bool has_state = true;  // false: torch keeps no state (plain SGD), so none is compared
};
void PrintTo(const OptimCase& c, std::ostream* os) { *os << c.name; }

template <class O, class Opt>
MakeOptimizer maker(Opt o) {
  return [o](nn::NamedTensors ps) { return std::make_unique<O>(std::move(ps), o); };
}

train::SgdOptions sgd(double lr, double momentum = 0, double dampening = 0, double wd = 0, bool nesterov = false) {
  train::SgdOptions o;
  o.lr = lr;
  o.momentum = momentum;
  o.dampening = dampening;
  o.weight_decay = wd;
  o.nesterov = nesterov;
  return o;
}

std::vector<OptimCase> optim_cases() {
  train::AdamOptions adam_custom;
  adam_custom.lr = 0.05;
  adam_custom.beta1 = 0.8;
  adam_custom.beta2 = 0.99;
  adam_custom.eps = 1e-6;
  adam_custom.weight_decay = 0.1;
  train::AdamWOptions adamw_strong;
  adamw_strong.lr = 0.05;
  adamw_strong.weight_decay = 0.5;
  return {
      {"sgd_plain", "sgd lr=0.1", maker<train::Sgd>(sgd(0.1)), false},
      {"sgd_weight_decay", "sgd lr=0.1 weight_decay=0.2", maker<train::Sgd>(sgd(0.1, 0, 0, 0.2)), false},
      {"sgd_momentum", "sgd lr=0.1 momentum=0.9", maker<train::Sgd>(sgd(0.1, 0.9))},
      {"sgd_momentum_dampening_wd", "sgd lr=0.05 momentum=0.8 dampening=0.3 weight_decay=0.1",
       maker<train::Sgd>(sgd(0.05, 0.8, 0.3, 0.1))},
      {"sgd_nesterov", "sgd lr=0.1 momentum=0.9 nesterov=1 weight_decay=0.01",
       maker<train::Sgd>(sgd(0.1, 0.9, 0, 0.01, true))},
      {"adam_defaults", "adam", maker<train::Adam>(train::AdamOptions{})},
      {"adam_custom_l2", "adam lr=0.05 beta1=0.8 beta2=0.99 eps=1e-6 weight_decay=0.1", maker<train::Adam>(adam_custom)},
      {"adamw_defaults", "adamw", maker<train::AdamW>(train::AdamWOptions{})},
      {"adamw_strong_decay", "adamw lr=0.05 weight_decay=0.5", maker<train::AdamW>(adamw_strong)},
  };
}

class OptimParity : public ::testing::TestWithParam<OptimCase> {};

// Same initial parameters, same gradients (some parameters without a grad at
// some steps), lr halved mid-run: final parameters and every state buffer
// equal torch's within 1e-6 relative.
TEST_P(OptimParity, MatchesTorch) {
  const OptimCase& c = GetParam();
  SafetensorsFile ref = run_oracle("optim.py", c.oracle_args);
  const int steps = std::stoi(ref.metadata.at("steps"));
  const int lr_step = std::stoi(ref.metadata.at("lr_step"));
  nn::NamedTensors ps = params_from(ref);
  ASSERT_EQ(ps.size(), 3u);
  auto opt = c.make(ps);
  for (int t = 0; t < steps; ++t) {
    if (t == lr_step) opt->set_lr(opt->lr() * 0.5);
    for (auto& [name, p] : ps) {
      std::string g = "grad." + std::to_string(t) + "." + name;
      if (ref.has(g))
        set_grad(p, ref.get(g));
      else
        p.zero_grad();
    }
    opt->step();
  }
  EXPECT_EQ(opt->step_count(), steps);
  for (auto& [name, p] : ps)
    EXPECT_NORMWISE_CLOSE(p, ref.get("final." + name), 1e-6, std::string(c.name) + " final." + name);

  // Every state entry torch has, we have (and with equal values).
  nn::NamedTensors state = opt->state();
  int compared = 0;
  for (const auto& [name, t] : ref.tensors) {
    std::string kind = name.substr(0, name.find('.'));
    if (kind == "init" || kind == "grad" || kind == "final") continue;
    const Tensor* ours = find(state, name);
    ASSERT_NE(ours, nullptr) << c.name << ": our state lacks '" << name << "'";
    if (kind == "step")
      EXPECT_EQ(decode_count(*ours), int64_t(t.data()[0])) << c.name << " " << name;
    else
      EXPECT_NORMWISE_CLOSE(*ours, t, 1e-6, std::string(c.name) + " state " + name);
    ++compared;
  }
  EXPECT_EQ(compared > 0, c.has_state) << c.name << ": torch's state has " << compared << " entries";
}

INSTANTIATE_TEST_SUITE_P(Train, OptimParity, ::testing::ValuesIn(optim_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

struct ClipCase {
  const char* name;
  const char* oracle_args;
  double max_norm, norm_type;
  bool clips;  // whether the total exceeds max_norm (guards against a case that tests nothing)
};
void PrintTo(const ClipCase& c, std::ostream* os) { *os << c.name; }
class ClipParity : public ::testing::TestWithParam<ClipCase> {};

TEST_P(ClipParity, MatchesTorch) {
  const ClipCase& c = GetParam();
  SafetensorsFile ref = run_oracle("optim.py", c.oracle_args);
  nn::NamedTensors ps = params_from(ref);
  for (auto& [name, p] : ps)
    if (ref.has("grad.0." + name)) set_grad(p, ref.get("grad.0." + name));
  train::ClipGradOptions o;
  o.norm_type = c.norm_type;
  double total = train::clip_grad_norm(ps, c.max_norm, o);
  double want = ref.get("total_norm").data()[0];
  EXPECT_NEAR(total, want, 1e-6 * want) << c.name;
  EXPECT_EQ(total > c.max_norm, c.clips) << c.name << ": total " << total;
  int compared = 0;
  for (auto& [name, p] : ps) {
    if (!ref.has("clipped." + name)) {
      EXPECT_FALSE(p.grad().defined()) << name;
      continue;
    }
    EXPECT_NORMWISE_CLOSE(p.grad(), ref.get("clipped." + name), 1e-6, std::string(c.name) + " " + name);
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

INSTANTIATE_TEST_SUITE_P(Train, ClipParity,
                         ::testing::Values(ClipCase{"l2_clips", "clip max_norm=1.0", 1.0, 2.0, true},
                                           ClipCase{"l2_no_clip", "clip max_norm=100", 100.0, 2.0, false},
                                           ClipCase{"inf_clips", "clip max_norm=2.0 norm_type=inf", 2.0, INFINITY, true},
                                           ClipCase{"l1_clips", "clip max_norm=5 norm_type=1", 5.0, 1.0, true}),
                         [](const auto& info) { return std::string(info.param.name); });

// (the fixtures and their TEST_Ps in one anonymous namespace: GCC warns when a
// test class outside it derives from a fixture inside it in an included file,
// which every file of a unity build is)
}  // namespace

TEST(Train, ClipGradNormWithoutGradsIsZeroAndValidates) {
  Rng rng(3);
  nn::NamedTensors ps{{"a", randn({3}, rng).set_requires_grad()}};
  EXPECT_EQ(train::clip_grad_norm(ps, 1.0), 0.0);
  EXPECT_THROW(train::clip_grad_norm(ps, -1.0), std::invalid_argument);
  set_grad(ps[0].second, Tensor::from({NAN, 1, 2}, {3}));
  train::ClipGradOptions o;
  o.error_if_nonfinite = true;
  EXPECT_THROW(train::clip_grad_norm(ps, 1.0, o), std::runtime_error);
}

// A parameter without a grad is not touched at all, even with weight decay.
TEST(Train, ParamWithoutGradIsSkipped) {
  Rng rng(5);
  Tensor a = randn({4, 4}, rng).set_requires_grad(), b = randn({7}, rng).set_requires_grad();
  Tensor b0 = b.clone(), a0 = a.clone();
  train::AdamW opt({{"a", a}, {"b", b}});
  for (int i = 0; i < 3; ++i) {
    set_grad(a, randn({4, 4}, rng));
    opt.step();
  }
  EXPECT_TRUE(bit_equal(b, b0));
  EXPECT_FALSE(bit_equal(a, a0));
  nn::NamedTensors st = opt.state();
  EXPECT_NE(find(st, "exp_avg.a"), nullptr);
  EXPECT_EQ(find(st, "exp_avg.b"), nullptr);
  EXPECT_EQ(find(st, "step.b"), nullptr);
  EXPECT_EQ(decode_count(*find(st, "step.a")), 3);
}

TEST(Train, ZeroGrad) {
  Rng rng(6);
  Tensor a = randn({5}, rng).set_requires_grad();
  train::Sgd opt({{"a", a}});
  set_grad(a, randn({5}, rng));
  const float* storage = a.grad().data();
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().data(), storage) << "zero_grad(false) must zero in place";
  for (float v : a.grad().to_vector()) EXPECT_EQ(v, 0.0f);
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

// Export after k steps, import into a fresh optimizer over copies of the
// parameters, continue both: bit-identical.
TEST(Train, StateRoundTripContinuesIdentically) {
  std::vector<MakeOptimizer> makers = {maker<train::Adam>(train::AdamOptions{}),
                                       maker<train::AdamW>(train::AdamWOptions{}),
                                       maker<train::Sgd>(sgd(0.1, 0.9, 0.1, 0.01))};
  for (auto& make : makers) {
    Rng rng(11);
    Tensor w = randn({6, 5}, rng).set_requires_grad(), b = randn({5}, rng).set_requires_grad();
    auto opt = make({{"w", w}, {"b", b}});
    auto grads = [&](Rng& r) {
      set_grad(w, randn({6, 5}, r));
      set_grad(b, randn({5}, r));
    };
    for (int i = 0; i < 3; ++i) grads(rng), opt->step();
    opt->set_lr(0.0123);
    Tensor w2 = w.clone().set_requires_grad(), b2 = b.clone().set_requires_grad();
    auto opt2 = make({{"w", w2}, {"b", b2}});
    opt2->load_state(opt->state());
    opt2->set_lr(0.0123);  // not tensor state: checkpoints carry it in metadata
    EXPECT_EQ(opt2->step_count(), 3);
    Rng r1(99), r2(99);
    for (int i = 0; i < 4; ++i) {
      grads(r1);
      opt->step();
      set_grad(w2, w.grad());
      set_grad(b2, b.grad());
      opt2->step();
    }
    EXPECT_TRUE(bit_equal(w, w2)) << opt->name();
    EXPECT_TRUE(bit_equal(b, b2)) << opt->name();
  }
}

TEST(Train, StepCountsAbove2To24RoundTrip) {
  Tensor a = Tensor::zeros({2}).set_requires_grad();
  train::Adam opt({{"a", a}});
  const int64_t big = (int64_t(1) << 40) + 12345;
  Tensor enc = Tensor::from({float(big >> 24), float(big & ((1 << 24) - 1))}, {2});
  opt.load_state({{"step", enc}});
  EXPECT_EQ(opt.step_count(), big);
  EXPECT_EQ(decode_count(*find(opt.state(), "step")), big);
}

namespace {
std::string load_state_error(train::Optimizer& opt, const nn::NamedTensors& st) {
  try {
    opt.load_state(st);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}
}  // namespace

TEST(Train, LoadStateRejectsMismatches) {
  Rng rng(8);
  Tensor w = randn({3, 2}, rng).set_requires_grad();
  train::Sgd sgd_opt({{"w", w}}, sgd(0.1, 0.9));
  set_grad(w, randn({3, 2}, rng));
  sgd_opt.step();
  train::Adam adam({{"w", w}});
  std::string e = load_state_error(adam, sgd_opt.state());
  EXPECT_NE(e.find("momentum_buffer.w"), std::string::npos) << e;
  EXPECT_NE(e.find("different optimizer"), std::string::npos) << e;

  set_grad(w, randn({3, 2}, rng));
  adam.step();
  nn::NamedTensors good = adam.state();
  auto with = [&](const std::string& name, Tensor t) {
    nn::NamedTensors s;
    for (auto& [n, v] : good) s.emplace_back(n, n == name ? t : v);
    return s;
  };
  auto without = [&](const std::string& name) {
    nn::NamedTensors s;
    for (auto& [n, v] : good)
      if (n != name) s.emplace_back(n, v);
    return s;
  };
  e = load_state_error(adam, with("exp_avg.w", Tensor::zeros({2, 3})));
  EXPECT_NE(e.find("'exp_avg.w': expected shape [3, 2], found [2, 3]"), std::string::npos) << e;
  e = load_state_error(adam, without("exp_avg_sq.w"));
  EXPECT_NE(e.find("no 'exp_avg_sq.w'"), std::string::npos) << e;
  e = load_state_error(adam, without("step"));
  EXPECT_NE(e.find("no 'step'"), std::string::npos) << e;
  e = load_state_error(adam, with("step.w", Tensor::from({0.5f, 1.0f}, {2})));
  EXPECT_NE(e.find("malformed step count"), std::string::npos) << e;
  nn::NamedTensors extra = good;
  extra.emplace_back("exp_avg.nope", Tensor::zeros({1}));
  e = load_state_error(adam, extra);
  EXPECT_NE(e.find("'exp_avg.nope' does not name a parameter"), std::string::npos) << e;
  // A rejected state leaves the optimizer as it was.
  EXPECT_EQ(adam.step_count(), 1);
  EXPECT_TRUE(bit_equal(*find(adam.state(), "exp_avg.w"), *find(good, "exp_avg.w")));
}

TEST(Train, ConstructorValidates) {
  Rng rng(9);
  Tensor a = randn({2}, rng).set_requires_grad();
  EXPECT_THROW(train::Sgd({{"a", a}, {"a", randn({2}, rng)}}), std::invalid_argument);
  EXPECT_THROW(train::Sgd({{"a", a}, {"b", a}}), std::invalid_argument);
  EXPECT_THROW(train::Sgd({{"a", a}}, sgd(-0.1)), std::invalid_argument);
  EXPECT_THROW(train::Sgd({{"a", a}}, sgd(0.1, 0.0, 0.0, 0.0, /*nesterov=*/true)), std::invalid_argument);
  train::AdamOptions bad;
  bad.beta2 = 1.0;
  EXPECT_THROW(train::Adam({{"a", a}}, bad), std::invalid_argument);
  train::Adam ok({{"a", a}});
  EXPECT_THROW(ok.set_lr(NAN), std::invalid_argument);
}

TEST(Train, DeriveSeedSeparatesStreams) {
  EXPECT_EQ(train::derive_seed(42, "data"), train::derive_seed(42, "data"));
  EXPECT_NE(train::derive_seed(42, "data"), train::derive_seed(42, "dropout"));
  EXPECT_NE(train::derive_seed(42, "data"), train::derive_seed(43, "data"));
  Rng a = train::make_rng(42, "init"), b = train::make_rng(42, "init"), c = train::make_rng(42, "data");
  uint64_t va = a.next_u64();
  EXPECT_EQ(va, b.next_u64());
  EXPECT_NE(va, c.next_u64());
}
