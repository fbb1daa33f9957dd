// Crash safety of checkpoint writes: a child process saves a large file to the
// same path over and over; the parent reads the path while the child writes
// and SIGKILLs it at random moments. Every read, during the writes and after
// each kill, must find one complete version (the older or a newer one, never
// going back), and never a partial file. Killed writers leave their temporary
// files (<path>.tmp.<pid>) behind; loading by path ignores them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "attn/tensor/safetensors.h"
#include "train_test_util.h"

using namespace attn;
using namespace attn::testing;

namespace {

constexpr int kTensors = 4;
constexpr int64_t kRows = 512, kCols = 512;  // 4 x 1 MiB = 4 MiB per version

// Version v: every element of tensor j holds v * kTensors + j (exact in F32
// for v < 2^22), so a file mixing two versions, or half-written, cannot pass.
float value(int64_t v, int j) { return float(v * kTensors + j); }
void fill(nn::NamedTensors& ts, int64_t v) {
  for (int j = 0; j < kTensors; ++j) std::fill_n(ts[j].second.data(), kRows * kCols, value(v, j));
}

// Loads `path` and checks it is exactly one complete version; returns that
// version, or -1 after recording a test failure.
int64_t load_version(const std::string& path) {
  SafetensorsFile f;
  try {
    f = load_safetensors(path);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the file at the path does not load: " << e.what();
    return -1;
  }
  int64_t v = std::stoll(f.metadata.at("version"));
  if (f.tensors.size() != size_t(kTensors)) {
    ADD_FAILURE() << "version " << v << ": " << f.tensors.size() << " tensors";
    return -1;
  }
  for (int j = 0; j < kTensors; ++j) {
    const Tensor& t = f.get("t" + std::to_string(j));
    if (t.shape() != Shape{kRows, kCols}) {
      ADD_FAILURE() << "version " << v << ": shape " << t.shape().str();
      return -1;
    }
    const float* p = t.data();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (p[i] != value(v, j)) {
        ADD_FAILURE() << "version " << v << ": tensor t" << j << " element " << i << " is " << p[i]
                      << " (a mix of versions or a partial write)";
        return -1;
      }
  }
  return v;
}

}  // namespace

TEST(CheckpointKill, KilledWriterNeverLeavesPartialFile) {
  TempDir dir("ckpt_kill");
  const std::string path = dir.path + "/model.safetensors";
  nn::NamedTensors ts;
  for (int j = 0; j < kTensors; ++j) ts.emplace_back("t" + std::to_string(j), Tensor::empty({kRows, kCols}));
  fill(ts, 0);
  save_safetensors(path, ts, {{"version", "0"}});

  constexpr int kRounds = 8;
  Rng rng(2024);
  int64_t last = 0;
  int rounds_with_new_version = 0, reads = 0;
  for (int r = 0; r < kRounds; ++r) {
    const int64_t first_version = int64_t(r + 1) * 100000;  // < 2^22 for every round
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      // Child: overwrite the path with new versions until killed. No OpenMP,
      // no gtest: only the save path, then _exit.
      try {
        for (int64_t v = first_version;; ++v) {
          fill(ts, v);
          save_safetensors(path, ts, {{"version", std::to_string(v)}});
        }
      } catch (...) {
        ::_exit(2);
      }
    }
    // A failed assertion below returns early: the writer must not outlive it.
    struct KillOnExit {
      pid_t pid;
      ~KillOnExit() {
        if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
      }
    } guard{pid};
    // Parent: read while the child writes, then kill it at a moment chosen so
    // that the test does not depend on the machine's speed: even rounds wait
    // until this writer has completed a save (the path holds one of its
    // versions), odd rounds until its temporary file exists (the kill lands
    // mid-write, between creating it and renaming it into place, at once);
    // even rounds then read on for a random 0-100 ms more.
    const std::string tmp = path + ".tmp." + std::to_string(pid);
    int64_t seen = last, last_seen = last;
    auto reached = [&] { return r % 2 == 1 ? std::filesystem::exists(tmp) : last_seen >= first_version; };
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!reached()) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "round " << r << ": the writer made no progress in 120 s";
      if (r % 2 == 0) {
        last_seen = load_version(path);
        ++reads;
        ASSERT_GE(last_seen, seen) << "round " << r << ": a read went back to an older version";
        seen = last_seen;
      }
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(r % 2 == 0 ? rng.below(100) : 0);
    while (std::chrono::steady_clock::now() < deadline) {
      int64_t v = load_version(path);
      ++reads;
      ASSERT_GE(v, seen) << "round " << r << ": a read went back to an older version";
      seen = v;
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    guard.pid = 0;
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "round " << r << ": the writer ended by itself (status " << status << "): a save failed";
    int64_t v = load_version(path);
    ASSERT_GE(v, 0);
    ASSERT_GE(v, seen) << "round " << r;
    ASSERT_TRUE(v == last || v >= first_version) << "round " << r << ": version " << v << " is neither the old "
                                                 << last << " nor one of this writer's";
    if (v != last) ++rounds_with_new_version;
    last = v;
  }
  int leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    if (e.path().filename().string().rfind("model.safetensors.tmp.", 0) == 0) ++leftovers;
  std::cout << "[ kill test ] " << kRounds << " kills, " << rounds_with_new_version << " rounds saw a new version, "
            << reads << " reads during writes, " << leftovers << " temporary files left by killed writers\n";
  // Guards against a test that never reaches the interesting moments.
  EXPECT_GT(rounds_with_new_version, 0) << "no writer ever completed a save: the kills came too early";
  EXPECT_GT(leftovers, 0) << "no kill ever landed during a write";
  EXPECT_EQ(load_version(path), last) << "loading ignores the leftover temporary files";
}
