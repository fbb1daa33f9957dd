// Resume determinism: a small linear regression trained with Adam for N steps
// gives bit-identical parameters to N/2 steps + save_checkpoint + a fresh
// process-like restart (new model, optimizer and Rng) + load_checkpoint + N/2
// steps. Leaving out the optimizer state or the Rng state must break that
// (so the test can fail).
#include <gtest/gtest.h>

#include <cstring>

#include "attn/autograd/ops.h"
#include "attn/train/checkpoint.h"
#include "attn/train/clip_grad.h"
#include "attn/train/seed.h"
#include "train_test_util.h"

using namespace attn;
using namespace attn::testing;

namespace {

constexpr int64_t kIn = 8, kOut = 2, kSampleRows = 256, kBatch = 16;
constexpr int kSteps = 40;
constexpr int kDecayAt = 12;  // lr *= 0.3 here: the resumed run must get the decayed lr from the checkpoint
constexpr uint64_t kRunSeed = 5;

// y = x W^T + b, W [out, in], b [out]
struct LinReg : nn::Module {
  explicit LinReg(uint64_t seed) {
    Rng rng(seed);
    fc = register_module("fc", std::make_shared<nn::Linear>(kIn, kOut, true, rng));
  }
  std::shared_ptr<nn::Linear> fc;
};

// x [rows, in], y [rows, out] = x W_true^T + 0.1 noise
struct Data {
  Data() {
    Rng rng(77);
    x = randn({kSampleRows, kIn}, rng);
    Tensor w = randn({kOut, kIn}, rng);
    NoGradGuard ng;
    y = matmul(x, w, false, true) + randn({kSampleRows, kOut}, rng, 0.1f);
  }
  Tensor x, y;
};

// mean((model(x) - y)^2) over the whole data set
float full_loss(const LinReg& m, const Data& d) {
  NoGradGuard ng;
  Tensor diff = m.fc->forward(d.x) - d.y;
  return mean_all(diff * diff).item();
}

// One step on a minibatch whose rows are drawn with `rng`.
void train_step(LinReg& m, train::Optimizer& opt, const Data& d, Rng& rng, int step) {
  Tensor xb = Tensor::empty({kBatch, kIn}), yb = Tensor::empty({kBatch, kOut});
  for (int64_t b = 0; b < kBatch; ++b) {
    int64_t r = int64_t(rng.below(kSampleRows));
    std::memcpy(xb.data() + b * kIn, d.x.data() + r * kIn, kIn * sizeof(float));
    std::memcpy(yb.data() + b * kOut, d.y.data() + r * kOut, kOut * sizeof(float));
  }
  Tensor diff = m.fc->forward(xb) - yb;
  backward(mean_all(diff * diff));
  train::clip_grad_norm(m.named_parameters(), 1.0);
  if (step == kDecayAt) opt.set_lr(opt.lr() * 0.3);
  opt.step();
  opt.zero_grad();
}

train::AdamOptions adam_options() {
  train::AdamOptions o;
  o.lr = 0.05;
  o.weight_decay = 1e-3;
  return o;
}

// The uninterrupted run.
std::unique_ptr<LinReg> straight_run(const Data& d) {
  auto m = std::make_unique<LinReg>(train::derive_seed(kRunSeed, "init"));
  train::Adam opt(m->named_parameters(), adam_options());
  Rng rng = train::make_rng(kRunSeed, "data");
  for (int s = 0; s < kSteps; ++s) train_step(*m, opt, d, rng, s);
  return m;
}

struct ResumeOptions {
  bool restore_optimizer = true;  // false: continue with a fresh Adam
  bool restore_rng = true;        // false: continue with a freshly seeded Rng
};

// Half the steps, checkpoint, restart from scratch objects, load, the rest.
std::unique_ptr<LinReg> resumed_run(const Data& d, const std::string& dir, const ResumeOptions& ro) {
  {
    LinReg m(train::derive_seed(kRunSeed, "init"));
    train::Adam opt(m.named_parameters(), adam_options());
    Rng rng = train::make_rng(kRunSeed, "data");
    for (int s = 0; s < kSteps / 2; ++s) train_step(m, opt, d, rng, s);
    train::CheckpointSave save;
    save.model = &m;
    save.config_json = R"({"in": 8, "out": 2})";
    save.optimizer = &opt;
    save.trainer.step = kSteps / 2;
    save.trainer.rng_state = rng.state();
    train::save_checkpoint(dir, save);
  }
  // "Restart": everything built anew, with other seeds, so only the checkpoint carries the run.
  auto m = std::make_unique<LinReg>(12345);
  train::Adam opt(m->named_parameters(), adam_options());
  Rng rng(999);
  train::LoadedCheckpoint got = train::load_checkpoint(dir, {m.get(), ro.restore_optimizer ? &opt : nullptr});
  if (ro.restore_rng) rng.set_state(got.trainer.rng_state);
  for (int s = int(got.trainer.step); s < kSteps; ++s) train_step(*m, opt, d, rng, s);
  return m;
}

}  // namespace

TEST(Resume, CheckpointMidRunGivesIdenticalParameters) {
  TempDir dir("resume");
  Data d;
  auto straight = straight_run(d);
  LinReg init(train::derive_seed(kRunSeed, "init"));
  EXPECT_LT(full_loss(*straight, d), 0.5f * full_loss(init, d)) << "the run must actually train";

  auto resumed = resumed_run(d, dir.path + "/ckpt", {});
  EXPECT_TRUE(params_bit_equal(*straight, *resumed)) << "resumed run differs from the uninterrupted one";

  ResumeOptions no_opt;
  no_opt.restore_optimizer = false;
  EXPECT_FALSE(params_bit_equal(*straight, *resumed_run(d, dir.path + "/no_opt", no_opt)))
      << "without the optimizer state the resumed run should differ (else this test proves nothing)";
  ResumeOptions no_rng;
  no_rng.restore_rng = false;
  EXPECT_FALSE(params_bit_equal(*straight, *resumed_run(d, dir.path + "/no_rng", no_rng)))
      << "without the Rng state the resumed run should differ (else this test proves nothing)";
}
