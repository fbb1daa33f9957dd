// Data-parallel `attn train` under `mpirun` (docs/distributed-training.md):
// 2 ranks give the parameters of 1 process up to the order of float sums; a
// rank killed or stopped ends the job within a bound, naming the rank; the
// last checkpoint resumes on another number of ranks; SIGTERM to mpirun
// checkpoints and stops as it does a single process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "attn/tensor/safetensors.h"
#include "caption_run.h"
#include "mpi_run.h"
#include "toy_run.h"
#include "train_test_util.h"

using namespace attn::testing;
namespace fs = std::filesystem;

#ifndef ATTN_HAVE_MPI
TEST(MpiTrain, NeedsMpi) { GTEST_SKIP() << "built without MPI (ATTN_MPI=OFF or no libopenmpi-dev)"; }
#else
namespace {

using Clock = std::chrono::steady_clock;

// The largest |a - b| over every parameter of two model files (same names and shapes).
double max_abs_diff(const std::string& a_path, const std::string& b_path) {
  const attn::SafetensorsFile a = attn::load_safetensors(a_path), b = attn::load_safetensors(b_path);
  EXPECT_EQ(a.tensors.size(), b.tensors.size());
  double m = 0;
  for (const auto& [name, t] : a.tensors) {
    const attn::Tensor& u = b.get(name);
    EXPECT_EQ(t.shape(), u.shape()) << name;
    for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, double(std::fabs(t.data()[i] - u.data()[i])));
  }
  return m;
}

nlohmann::json trainer_state(const std::string& run) {
  return nlohmann::json::parse(read_bytes(run + "/checkpoint/trainer_state.json"));
}

// Waits up to `seconds` for `pid` to exit; its exit code (-signal), or 1000 when it is still running.
int wait_exit_within(pid_t pid, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 1000;
}

// Waits up to 120 s until `path` exists.
bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 1200 && !fs::exists(path); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return fs::exists(path);
}

// A run of the toy task that goes on until stopped, checkpointing every
// `checkpoint_every` steps (0: only when it stops).
std::string endless_config(const std::string& dir, const std::string& run, const std::string& extra = "",
                           int checkpoint_every = 5, int log_every = 1) {
  const std::string cfg = run + ".yaml";
  attn::data::write_lines(cfg, {toy_config(dir, run,
                                           "  max_steps: 100000\n  max_epochs: 0\n  valid_every: 1000000\n"
                                           "  log_every: " + std::to_string(log_every) +
                                               "\n  threads: 1\n  checkpoint_minutes: 0\n"
                                           "  checkpoint_every: " + std::to_string(checkpoint_every) + "\n" + extra)});
  return cfg;
}

}  // namespace

// Every model kind (rnnsearch, luong, the Transformer, the captioner), the
// same global batches and seed, without dropout, on 1 process and on 2 ranks
// (dropout draws from each rank's own stream: none here, attention's
// either): the parameters after 6 steps (a validation after step 3: rank 0's
// verdict reaches rank 1) agree up to the order of float sums.
//
// Tolerance. The ranks' runs differ from the single process only in rounding:
// each gradient element is a float32 sum over the batch's target tokens
// (n <= 800 here, max_tokens), which 2 ranks split into 2 partial sums and
// MPI adds; and each rank's GEMMs run on half the rows, so their blocking and
// the forward activations round differently (relative ~1e-7 per op). A float32
// sum of n terms is off by at most n u sum|terms| (u = 2^-24 = 6e-8): with
// n = 800, 5e-5 of the gradient's scale, which is <= 1 after clipping (clip
// 1.0). adam_eps = 1 makes Adam's update lr m/(sqrt(v) + 1) Lipschitz in the
// gradient with a constant <= lr (without it, a gradient element near 0 whose
// sign rounding flips moves by 2 lr); so 6 steps of lr = 0.05 move a parameter
// by at most 6 x 0.05 x 5e-5 = 1.5e-5 from rounding, and the test allows 2e-5.
// A wrong normalisation or a lost gradient moves parameters by ~lr |g| = 1e-3
// and more: the check that the run of 5 steps differs from that of 6 by over
// 10x the tolerance shows the comparison can see a one-step change.
TEST(MpiTrain, TwoRanksGiveOneProcessParameters) {
  constexpr double kTolerance = 2e-5;
  struct Kind {
    const char* name;
    std::string model;
    bool captions = false;  // trained on generated scenes (caption_run.h)
  };
  const Kind kinds[] = {
      {"rnnsearch", std::string(kToyRnnSearch) + "  dropout: 0\n"},
      {"luong", "  type: luong\n  embed: 32\n  encoder_hidden: 32\n  decoder_hidden: 64\n  attention: 32\n"
                "  cell: lstm\n  score: general\n  dropout: 0\n"},
      {"transformer", std::string(kToyTransformer) + "  attention_dropout: 0\n"},
      {"show_attend_tell", toy_captioner("soft") + "  dropout: 0\n", true}};
  for (const auto& [kind, model, captions] : kinds) {
    SCOPED_TRACE(kind);
    TempDir c(std::string("mpi_equal_") + kind);
    write_toy(c.path, "train", 400, 1);
    write_toy(c.path, "valid", 30, 2);
    const std::string scenes = captions ? write_scenes(c.path + "/scenes", 40, 3) : "";
    auto config = [&](const std::string& run, int steps) {
      const std::string cfg = run + ".yaml", train = "  max_steps: " + std::to_string(steps) +
                                                      "\n  valid_every: 3\n  log_every: 1\n  threads: 1\n"
                                                      "  checkpoint_minutes: 0\n  adam_eps: 1\n";
      attn::data::write_lines(cfg, {captions ? caption_config(scenes, run, train, model)
                                             : toy_config(c.path, run, train, "", model)});
      return cfg;
    };
    const std::vector<std::string> lr = {"--set", "train.lr=0.05"};
    const std::string one = c.path + "/one", two = c.path + "/two", five = c.path + "/five";
    ASSERT_EQ(wait_exit(spawn_train(config(one, 6), lr, one + ".out")), 0) << read_bytes(one + ".out");
    ASSERT_EQ(wait_exit(spawn_mpirun(2, config(two, 6), lr, two + ".out")), 0) << read_bytes(two + ".out");
    ASSERT_EQ(wait_exit(spawn_train(config(five, 5), lr, five + ".out")), 0) << read_bytes(five + ".out");
    EXPECT_NE(read_bytes(two + ".out").find("x 2 ranks"), std::string::npos) << read_bytes(two + ".out");
    EXPECT_EQ(trainer_state(two).at("step"), 6);

    const double diff = max_abs_diff(one + "/checkpoint/model.safetensors", two + "/checkpoint/model.safetensors");
    std::printf("%s: max |1 process - 2 ranks| = %.3g (tolerance %.1g)\n", kind, diff, kTolerance);
    std::fflush(stdout);
    EXPECT_LE(diff, kTolerance);
    EXPECT_GT(max_abs_diff(one + "/checkpoint/model.safetensors", five + "/checkpoint/model.safetensors"),
              10 * kTolerance);
    // rank 0 alone wrote the run directory: one log, rank 1's streams in rank 0's checkpoint
    EXPECT_EQ(trainer_state(two).at("extra").at("rank_rngs").size(), 1u);
  }
}

// A rank killed (SIGKILL: nothing runs in it) ends the job: mpirun sees its
// child die and ends the others, naming the rank. A survivor waits in the
// step's gradient sum, where its SIGTERM handler only raises the stop flag,
// until mpirun's SIGKILL: measured, mpirun ends the job 2 x
// odls_base_sigkill_timeout after the death (60.0 s with 30, 10 s with 5).
// The last complete checkpoint then resumes on 1 process.
TEST(MpiTrain, KilledRankEndsJobAndCheckpointResumesOnOneProcess) {
  TempDir c("mpi_kill");
  write_toy(c.path, "train", 400, 1);
  write_toy(c.path, "valid", 30, 2);
  const std::string run = c.path + "/run", cfg = endless_config(c.path, run);
  const pid_t mpirun = spawn_mpirun(2, cfg, {}, run + ".out", /*sigkill_timeout=*/5);
  ASSERT_TRUE(wait_for_file(run + "/checkpoint/trainer_state.json")) << read_bytes(run + ".out");
  const pid_t victim = rank_pid(mpirun, 1);
  ASSERT_GT(victim, 0);
  const auto t0 = Clock::now();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const int code = wait_exit_within(mpirun, 60);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string out = read_bytes(run + ".out");
  ASSERT_NE(code, 1000) << "mpirun still running 60 s after rank 1 was killed";
  EXPECT_NE(code, 0) << out;
  // + 15 s: mpirun's notice and the test's polling on a loaded machine (ctest -j 2)
  EXPECT_LT(took, 2 * 5 + 15) << "the bound: 2 x odls_base_sigkill_timeout (5 s here) + mpirun's notice";
  EXPECT_NE(out.find("rank 1"), std::string::npos) << out;

  const int64_t saved = trainer_state(run).at("step").get<int64_t>();
  EXPECT_GT(saved, 0);
  const pid_t resumed = spawn_train(cfg, {"--resume", "--stop-after-steps", "2"}, run + ".resume.out");
  EXPECT_EQ(wait_exit(resumed), 0) << read_bytes(run + ".resume.out");
  EXPECT_EQ(trainer_state(run).at("step").get<int64_t>(), saved + 2);
}

// A rank that stops (SIGSTOP: alive, never arriving) is what no launcher
// notices: the watchdog does. Rank 0 waits train.dist_timeout_s for the
// next collective operation, names the rank that did not arrive and ends the
// job; mpirun then ends the others (within 2 x odls_base_sigkill_timeout).
TEST(MpiTrain, HungRankEndsJobAfterTimeout) {
  TempDir c("mpi_hang");
  write_toy(c.path, "train", 400, 1);
  write_toy(c.path, "valid", 30, 2);
  const std::string run = c.path + "/run", cfg = endless_config(c.path, run, "  dist_timeout_s: 5\n");
  const pid_t mpirun = spawn_mpirun(2, cfg, {}, run + ".out", /*sigkill_timeout=*/5);
  ASSERT_TRUE(wait_for_file(run + "/checkpoint/trainer_state.json")) << read_bytes(run + ".out");
  const pid_t victim = rank_pid(mpirun, 1);
  ASSERT_GT(victim, 0);
  const auto t0 = Clock::now();
  ASSERT_EQ(::kill(victim, SIGSTOP), 0);
  const int code = wait_exit_within(mpirun, 60);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  if (code == 1000) ::kill(victim, SIGKILL);  // not left behind stopped
  const std::string out = read_bytes(run + ".out");
  ASSERT_NE(code, 1000) << "mpirun still running 60 s after rank 1 stopped\n" << out;
  EXPECT_NE(code, 0) << out;
  EXPECT_LT(took, 5 + 2 * 5 + 15) << "the bound: dist_timeout_s + 2 x odls_base_sigkill_timeout + mpirun's notice";
  // rank 1 stops between two operations (most of its time): rank 0 names it at the next (a gradient sum,
  // or a checkpoint's gather) by its missing arrival; stopped inside an operation it had announced (seen
  // once in a full ctest -j 2), by its missing heartbeats
  EXPECT_NE(out.find("attn train: rank 0: waited 5 s for the "), std::string::npos) << out;
  EXPECT_TRUE(out.find("rank 1 did not arrive (dead, stopped or hung); ending the job") != std::string::npos ||
              out.find("rank 1 arrived, then sent no heartbeat for over 3 s") != std::string::npos)
      << out;
  EXPECT_GT(trainer_state(run).at("step").get<int64_t>(), 0);
}

// SIGTERM to mpirun reaches every rank, as Open MPI 4.1 ends a job: SIGCONT,
// odls_base_sigkill_timeout seconds, SIGTERM, as many again, SIGKILL (measured
// here: the ranks trained 30 s on after the signal with a timeout of 30). The
// ranks agree to stop after the same step and rank 0 checkpoints, as a single
// process does on SIGTERM, within the second timeout. (mpirun forwards no
// output while it waits: rank 0's last lines are in log.jsonl only, and
// log_every is large so that its progress lines cannot fill the pipe.) The
// run resumes on 2 ranks (each its own saved dropout stream) and on 3 (rank
// 2, absent from the checkpoint, draws a fresh one).
TEST(MpiTrain, SigtermCheckpointsAndResumesOnAnotherRankCount) {
  TempDir c("mpi_term");
  write_toy(c.path, "train", 400, 1);
  write_toy(c.path, "valid", 30, 2);
  const std::string run = c.path + "/run", cfg = endless_config(c.path, run, "", 0, 1000);
  const pid_t mpirun = spawn_mpirun(2, cfg, {}, run + ".out", /*sigkill_timeout=*/5);
  ASSERT_TRUE(wait_for_file(run + "/log.jsonl")) << read_bytes(run + ".out");
  for (int i = 0; i < 1200 && read_bytes(run + ".out").find("x 2 ranks") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // training under way
  ASSERT_FALSE(fs::exists(run + "/checkpoint")) << "no checkpoint before the signal";
  const auto t0 = Clock::now();
  ASSERT_EQ(::kill(mpirun, SIGTERM), 0);
  EXPECT_NE(wait_exit_within(mpirun, 60), 1000);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(took, 2 * 5 + 15) << "the bound: 2 x odls_base_sigkill_timeout (5 s here) + mpirun's notice";
  ASSERT_TRUE(fs::exists(run + "/checkpoint/trainer_state.json")) << read_bytes(run + ".out");
  const int64_t saved = trainer_state(run).at("step").get<int64_t>();
  EXPECT_GT(saved, 0);
  EXPECT_EQ(trainer_state(run).at("extra").at("rank_rngs").size(), 1u);

  for (int ranks : {2, 3}) {
    const int64_t before = trainer_state(run).at("step").get<int64_t>();
    const std::string log = run + ".resume" + std::to_string(ranks) + ".out";
    EXPECT_EQ(wait_exit(spawn_mpirun(ranks, cfg, {"--resume", "--stop-after-steps", "2"}, log)), 0) << read_bytes(log);
    EXPECT_EQ(trainer_state(run).at("step").get<int64_t>(), before + 2);
    EXPECT_EQ(trainer_state(run).at("extra").at("rank_rngs").size(), size_t(ranks - 1));
  }
}
#endif
