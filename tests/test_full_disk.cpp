// A full disk under `attn train`, made for real at the OS level: a file-size
// limit (RLIMIT_FSIZE, SIGXFSZ ignored, so write() fails with EFBIG) on the
// process, and, where mounting is permitted, a small tmpfs filled up. A failed
// checkpoint save stops the run, says the previous checkpoint is intact, and
// that checkpoint still resumes; a failed write of the log names its path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "toy_run.h"
#include "train_test_util.h"

using namespace attn::testing;
namespace fs = std::filesystem;

namespace {

constexpr const char* kOptions =
    "  max_steps: 100\n  max_epochs: 0\n  valid_every: 1000000\n  log_every: 1\n  threads: 1\n"
    "  checkpoint_minutes: 0\n";

// In the child before exec: no file may grow past `bytes`.
std::function<void()> file_size_limit(rlim_t bytes) {
  return [bytes] {
    ::signal(SIGXFSZ, SIG_IGN);  // inherited through exec: a write past the limit fails with EFBIG
    rlimit lim{bytes, bytes};
    ::setrlimit(RLIMIT_FSIZE, &lim);
  };
}

// `attn train` with config `cfg` for `steps` steps (resuming when asked); its
// exit code and output (kept in cfg.out, beside the config).
std::pair<int, std::string> train_steps(const std::string& cfg, int steps, bool resume,
                                        const std::function<void()>& before_exec = {}) {
  std::vector<std::string> args = {"--stop-after-steps", std::to_string(steps)};
  if (resume) args.push_back("--resume");
  const std::string out = cfg + ".out";
  const int code = wait_exit(spawn_train(cfg, args, out, before_exec));
  return {code, read_bytes(out)};
}

// The checkpoint save fails; the run says so, keeps the step-2 checkpoint
// (no temporary left) and resumes from it once there is room again.
void expect_failed_save_keeps_previous(const std::string& cfg, const std::string& run, int code,
                                       const std::string& out, const std::string& reason) {
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find(run + "/checkpoint: checkpoint not saved (the previous one is intact)"), std::string::npos)
      << out;
  EXPECT_NE(out.find(reason), std::string::npos) << out;
  EXPECT_EQ(checkpoint_step(run), 2);
  for (const auto& e : fs::directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().find("checkpoint.tmp-"), std::string::npos) << e.path() << " left behind";
  const auto [again, again_out] = train_steps(cfg, 1, true);
  EXPECT_EQ(again, 0) << again_out;
  EXPECT_NE(again_out.find("at step 2"), std::string::npos) << again_out;
  EXPECT_EQ(checkpoint_step(run), 3);
}

// The toy run in `out` (default dir/run) after `steps` steps (checkpointed);
// returns its config's path.
std::string run_steps(const std::string& dir, int steps = 2, const std::string& out = "") {
  const std::string cfg = write_toy_run(dir, kOptions, out);
  const auto [code, text] = train_steps(cfg, steps, false);
  EXPECT_EQ(code, 0) << text;
  return cfg;
}

}  // namespace

TEST(FullDisk, FailedCheckpointSaveUnderFileSizeLimitKeepsPrevious) {
  TempDir c("full_disk_fsize");
  const std::string cfg = run_steps(c.path), run = c.path + "/run";
  ASSERT_EQ(checkpoint_step(run), 2);
  const auto model_bytes = fs::file_size(run + "/checkpoint/model.safetensors");
  const auto log_bytes = fs::file_size(run + "/log.jsonl");
  // the log's next lines fit under the limit, the checkpoint's weights do not
  const rlim_t limit = log_bytes + 4096;
  ASSERT_LT(limit, model_bytes);
  const auto [code, out] = train_steps(cfg, 2, true, file_size_limit(limit));
  expect_failed_save_keeps_previous(cfg, run, code, out, "File too large");
}

TEST(FullDisk, FailedLogWriteNamesThePath) {
  TempDir c("full_disk_log");
  // 12 steps: a log over 1 KiB, so that the limit below lets the process
  // start. LLVM's OpenMP runtime (the clang sanitizer builds') sizes a 1 KiB
  // shared-memory file at start, and dies when the limit forbids it.
  const std::string cfg = run_steps(c.path, 12), run = c.path + "/run";
  ASSERT_EQ(checkpoint_step(run), 12);
  const std::string log_before = read_bytes(run + "/log.jsonl");
  ASSERT_GT(log_before.size(), 1024u);
  const auto [code, out] = train_steps(cfg, 2, true, file_size_limit(log_before.size() + 10));
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find(run + "/log.jsonl: write failed: File too large"), std::string::npos) << out;
  EXPECT_EQ(checkpoint_step(run), 12) << "the checkpoint is untouched";
}

// The same on a real filesystem that fills up: a 16 MiB tmpfs (skipped where
// mounting is not permitted, e.g. without CAP_SYS_ADMIN), filled after the
// first checkpoint until half a checkpoint's size is free.
TEST(FullDisk, FailedCheckpointSaveOnFullTmpfsKeepsPrevious) {
  TempDir c("full_disk_tmpfs");
  const std::string mnt = c.path + "/mnt";
  fs::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=16m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << ")";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string run = mnt + "/run", cfg = run_steps(c.path, 2, run);
  ASSERT_EQ(checkpoint_step(run), 2);
  uintmax_t checkpoint_bytes = 0;
  for (const auto& e : fs::directory_iterator(run + "/checkpoint")) checkpoint_bytes += e.file_size();
  struct statvfs st {};
  ASSERT_EQ(::statvfs(mnt.c_str(), &st), 0);
  const uintmax_t free_bytes = uintmax_t(st.f_bavail) * st.f_frsize;
  ASSERT_GT(free_bytes, checkpoint_bytes);
  const std::string filler = mnt + "/filler";
  write_bytes(filler, std::string(free_bytes - checkpoint_bytes / 2, '\0'));
  const auto [code, out] = train_steps(cfg, 2, true);
  fs::remove(filler);
  expect_failed_save_keeps_previous(cfg, run, code, out, "No space left on device");
}
