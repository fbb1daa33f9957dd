// `attn train` as a process: SIGTERM and SIGHUP checkpoint and stop like
// SIGINT (exit 128 + the signal), and --resume continues from that checkpoint;
// a second `attn train` on a directory in use fails at once naming it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "toy_run.h"
#include "train_test_util.h"

using namespace attn::testing;
namespace fs = std::filesystem;

namespace {

// Waits (up to 120 s) until the run's log has a progress record: training is under way.
bool wait_training(const std::string& run) {
  for (int i = 0; i < 1200; ++i) {
    std::ifstream in(run + "/log.jsonl");
    std::string line;
    while (std::getline(in, line))
      if (line.find("\"type\":\"train\"") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST(TrainSignals, SigtermAndSighupCheckpointAndResume) {
  TempDir c("train_signals");
  write_toy(c.path, "train", 400, 1);
  write_toy(c.path, "valid", 30, 2);
  for (int sig : {SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string run = c.path + "/run" + std::to_string(sig), cfg = run + ".yaml";
    std::ofstream(cfg) << toy_config(c.path, run,
                                     "  max_steps: 100000\n  max_epochs: 0\n  valid_every: 1000000\n  log_every: 1\n"
                                     "  threads: 1\n  checkpoint_minutes: 0\n");
    const pid_t pid = spawn_train(cfg, {}, run + ".out");
    ASSERT_TRUE(wait_training(run)) << read_bytes(run + ".out");
    ASSERT_FALSE(fs::exists(run + "/checkpoint")) << "no checkpoint before the signal (no validation, no timer)";

    // a second writer on the same directory fails at once, naming it and the holder
    const pid_t second = spawn_train(cfg, {"--resume"}, run + ".second.out");
    EXPECT_NE(wait_exit(second), 0);
    const std::string msg = read_bytes(run + ".second.out");
    EXPECT_NE(msg.find(run + ": the run directory is in use"), std::string::npos) << msg;
    EXPECT_NE(msg.find("pid " + std::to_string(pid)), std::string::npos) << msg;

    ASSERT_EQ(::kill(pid, sig), 0);
    EXPECT_EQ(wait_exit(pid), 128 + sig) << read_bytes(run + ".out");
    const int64_t saved = checkpoint_step(run);
    EXPECT_GT(saved, 0);

    const pid_t resumed = spawn_train(cfg, {"--resume", "--stop-after-steps", "2"}, run + ".resume.out");
    EXPECT_EQ(wait_exit(resumed), 0) << read_bytes(run + ".resume.out");
    EXPECT_EQ(checkpoint_step(run), saved + 2);
  }
}

// train.checkpoint_minutes checkpoints on wall time without a validation; a
// SIGKILL (which nothing can catch) then loses only the steps since, and the
// run resumes from that checkpoint.
TEST(TrainSignals, TimedCheckpointSurvivesSigkill) {
  TempDir c("train_timed");
  const std::string run = c.path + "/run";
  const std::string cfg = write_toy_run(c.path,
                                        "  max_steps: 100000\n  max_epochs: 0\n  valid_every: 1000000\n  log_every: 1\n"
                                        "  threads: 1\n  checkpoint_minutes: 0.002\n");
  const pid_t pid = spawn_train(cfg, {}, run + ".out");
  bool saved = false;
  for (int i = 0; i < 1200 && !saved; ++i) {
    saved = fs::exists(run + "/checkpoint/trainer_state.json");
    if (!saved) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(saved) << "no timed checkpoint: " << read_bytes(run + ".out");
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(pid), -SIGKILL);
  const pid_t resumed = spawn_train(cfg, {"--resume", "--stop-after-steps", "2"}, run + ".resume.out");
  EXPECT_EQ(wait_exit(resumed), 0) << read_bytes(run + ".resume.out");
  EXPECT_GT(checkpoint_step(run), 2);
}
