// NaN/Inf in training: a step whose loss or gradient norm is not finite is
// skipped (parameters and Adam state untouched), reported on the console and
// in log.jsonl, and train.max_nonfinite_steps such steps in a row stop the
// run with a message saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "attn/train/mt_trainer.h"
#include "toy_run.h"
#include "train_test_util.h"

using namespace attn;
using namespace attn::testing;

namespace {

// A run of the toy task without validation (a stopped run saves its checkpoint).
train::TrainConfig toy(const std::string& dir, const std::string& out, const std::string& extra = "") {
  return train::parse_train_config(toy_config(
      dir, out,
      "  max_steps: 40\n  max_epochs: 0\n  valid_every: 1000000\n  log_every: 1\n  threads: 1\n"
      "  checkpoint_minutes: 0\n" + extra));
}

// RunOptions whose gradient hook writes `value` into the first gradient at the
// given steps (1-based), and whose printed lines go to `lines`.
train::RunOptions poisoning(const std::set<int64_t>& steps, float value, std::vector<std::string>& lines) {
  train::RunOptions ro;
  ro.print = [&lines](const std::string& s) { lines.push_back(s); };
  auto calls = std::make_shared<int64_t>(0);
  ro.after_backward = [steps, value, calls](const nn::NamedTensors& params) {
    if (steps.count(++*calls)) params.front().second.grad().data()[0] = value;
  };
  return ro;
}

int count_containing(const std::vector<std::string>& lines, const std::string& s) {
  int n = 0;
  for (const auto& l : lines) n += l.find(s) != std::string::npos;
  return n;
}

}  // namespace

TEST(NonfiniteSteps, SkippedStepLeavesParametersAndAdamStateUntouched) {
  TempDir c("nonfinite_skip");
  write_toy_run(c.path, "");  // the corpora (the runs below use their own configs)
  std::vector<std::string> lines;
  train::RunOptions clean = poisoning({}, 0, lines);
  clean.stop_after_steps = 2;
  ASSERT_EQ(train::train_translation(toy(c.path, c.path + "/two"), clean).steps, 2);

  lines.clear();
  train::RunOptions poisoned = poisoning({3}, NAN, lines);
  poisoned.stop_after_steps = 3;
  ASSERT_EQ(train::train_translation(toy(c.path, c.path + "/three"), poisoned).steps, 3);
  EXPECT_EQ(count_containing(lines, "step 3: non-finite gradient norm (nan): update skipped (1 in a row"), 1);
  for (const char* f : {"/checkpoint/model.safetensors", "/checkpoint/optimizer.safetensors"})
    EXPECT_TRUE(same_tensors(c.path + "/two" + f, c.path + "/three" + f))
        << f << ": the skipped step 3 changed what step 2 left";
  // (the optimizer file's tensors include Adam's step counts; its metadata the LR)
  EXPECT_EQ(load_safetensors(c.path + "/two/checkpoint/optimizer.safetensors").metadata.at("lr"),
            load_safetensors(c.path + "/three/checkpoint/optimizer.safetensors").metadata.at("lr"));
  const std::string log = read_bytes(c.path + "/three/log.jsonl");
  EXPECT_NE(log.find(R"({"type":"skipped","step":3,"epoch":0,"nonfinite":"gradient norm","value":"nan"})"),
            std::string::npos)
      << log;
}

TEST(NonfiniteSteps, StopAfterMaxInARowCountingOnlyConsecutiveSteps) {
  TempDir c("nonfinite_stop");
  write_toy_run(c.path, "");
  std::vector<std::string> lines;
  // steps 2-3 skipped, 4 finite (the count starts again), 5-7 skipped: the third in a row stops the run
  train::RunOptions ro = poisoning({2, 3, 5, 6, 7}, INFINITY, lines);
  try {
    train::train_translation(toy(c.path, c.path + "/run", "  max_nonfinite_steps: 3\n"), ro);
    ADD_FAILURE() << "the run should stop";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("training stopped at step 7: 3 steps in a row had a non-finite loss or gradient norm "
                       "(train.max_nonfinite_steps = 3"),
              std::string::npos)
        << msg;
  }
  EXPECT_EQ(count_containing(lines, "non-finite gradient norm (inf): update skipped"), 5);
  EXPECT_EQ(count_containing(lines, "(2 in a row"), 2);  // steps 3 and 6
  EXPECT_EQ(count_containing(lines, "(3 in a row"), 1);  // step 7
}

// A learning rate (3e38) so large that the first update takes the weights to the
// edge of float range and the next forward pass overflows: every
// later loss is non-finite, and `attn train` stops after
// max_nonfinite_steps of them with exit 1 and the reason.
TEST(NonfiniteSteps, OverflowingRunStopsWithClearMessage) {
  TempDir c("nonfinite_cli");
  const std::string cfg = write_toy_run(c.path,
                                        "  max_steps: 40\n  max_epochs: 0\n  valid_every: 1000000\n  log_every: 1\n"
                                        "  threads: 1\n  checkpoint_minutes: 0\n  clip: 0\n");
  const CommandResult r = run_attn("train --config " + cfg + " --set train.lr=3e38", c.path);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("5 steps in a row had a non-finite loss or gradient norm (train.max_nonfinite_steps = 5"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no checkpoint was written"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("non-finite loss (nan): update skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(5 in a row; the run stops at 5)"), std::string::npos) << r.out;
}
