// `attn train` killed with SIGKILL at random moments, many times, each time
// resumed from the newest complete checkpoint, until the run finishes: the
// final parameters, optimizer state and best model equal, bit for bit, those
// of the same run never interrupted (same seed, same threads).
//
// Kill moments are chosen by the run's progress, never by time alone (a
// slower machine must not change what is tested): the parent watches the run
// directory with inotify and kills after a new log line (plus a random short
// delay), as soon as a checkpoint's temporary directory appears, after 1-3 of
// its files are complete, when the old checkpoint leaves its place, or after a
// new checkpoint is in place (plus a random short delay). Checkpoints are
// written every 2 steps (train.checkpoint_every), so many kills land inside a
// save. After each kill the directory tells where it landed: a temporary
// directory left (mid-save), checkpoint.prev without checkpoint (between the
// renames), or neither (between saves); the next start must remove the
// leftovers and say so.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "attn/viz/curves.h"
#include "toy_run.h"
#include "train_test_util.h"

using namespace attn;
using namespace attn::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Event {
  int wd = -1;
  uint32_t mask = 0;
  std::string name;
};

// inotify on the run directory (and on the temporary directory of a save).
class DirWatch {
public:
  explicit DirWatch(const std::string& dir) : dir(dir), fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    run_wd = add(dir);
  }
  ~DirWatch() { ::close(fd_); }
  int add(const std::string& dir) {
    return ::inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_MOVE_SELF);
  }
  void remove(int wd) { ::inotify_rm_watch(fd_, wd); }
  // The next event within `ms` milliseconds, or nothing.
  std::optional<Event> next(int ms) {
    if (queue_.empty()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, ms) <= 0) return std::nullopt;
      alignas(inotify_event) char buf[16384];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      for (ssize_t i = 0; i < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + i);
        queue_.push_back({e->wd, e->mask, e->len ? std::string(e->name) : std::string()});
        i += ssize_t(sizeof(inotify_event) + e->len);
      }
      if (queue_.empty()) return std::nullopt;
    }
    Event e = queue_.front();
    queue_.erase(queue_.begin());
    return e;
  }
  void drain() {
    while (next(0)) {
    }
  }
  const std::string dir;
  int run_wd = -1;

private:
  int fd_;
  std::vector<Event> queue_;
};

// One `attn train` process of the killed run.
struct Child {
  pid_t pid = -1;
  std::optional<int> exit_code;  // set once it ended by itself
  bool running() {
    if (exit_code) return false;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) != pid) return true;
    exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return false;
  }
};

enum class KillAt { kAfterLogLine, kSaveStarted, kSaveFilesWritten, kOldMovedAside, kAfterSave, kCount };
const char* name(KillAt k) {
  static const char* names[] = {"after a log line", "save started", "1-3 files of a save written",
                                "old checkpoint leaves its place", "after a save"};
  return names[int(k)];
}

// Waits until the child reaches the moment `at`, then returns (true), or
// until it ends by itself (false). A test failure after 120 s without either.
bool wait_for_moment(KillAt at, DirWatch& w, Child& c, Rng& rng) {
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  int tmp_wd = -1, files_left = 1 + int(rng.below(3));
  auto reached = [&](const Event& e) {
    const bool in_run = e.wd == w.run_wd;
    switch (at) {
      case KillAt::kAfterLogLine: return in_run && (e.mask & IN_MODIFY) && e.name == "log.jsonl";
      case KillAt::kSaveStarted: return in_run && (e.mask & IN_CREATE) && e.name.rfind("checkpoint.tmp-", 0) == 0;
      case KillAt::kOldMovedAside:  // renamed to checkpoint.prev (or, were it deleted, as it goes)
        return in_run && (e.mask & (IN_MOVED_FROM | IN_DELETE)) && e.name == "checkpoint";
      case KillAt::kAfterSave: return in_run && (e.mask & IN_MOVED_TO) && e.name == "checkpoint";
      case KillAt::kSaveFilesWritten:
        if (in_run && (e.mask & IN_CREATE) && e.name.rfind("checkpoint.tmp-", 0) == 0 && tmp_wd < 0)
          tmp_wd = w.add(w.dir + "/" + e.name);
        else if (e.wd == tmp_wd && (e.mask & IN_MOVED_TO) && e.name.find(".tmp.") == std::string::npos)
          return --files_left == 0;  // a checkpoint file renamed into place inside the new directory
        else if (e.wd == tmp_wd && (e.mask & IN_MOVE_SELF))
          return true;  // the save finished first: kill right after it
        return false;
      default: return false;
    }
  };
  while (Clock::now() < give_up) {
    if (!c.running()) return false;
    if (auto e = w.next(20); e && reached(*e)) {
      if (tmp_wd >= 0) w.remove(tmp_wd);
      return true;
    }
  }
  ADD_FAILURE() << "the run did not reach the moment '" << name(at) << "' within 120 s";
  return false;
}

}  // namespace

namespace {

bool complete(const std::string& dir) { return fs::exists(dir + "/trainer_state.json"); }

int64_t step_of(const std::string& checkpoint) {
  return nlohmann::json::parse(read_bytes(checkpoint + "/trainer_state.json")).at("step").get<int64_t>();
}

// The step of the newest complete checkpoint (checkpoint/, else checkpoint.prev/), -1 when none.
int64_t newest_step(const std::string& run) {
  if (complete(run + "/checkpoint")) return step_of(run + "/checkpoint");
  if (complete(run + "/checkpoint.prev")) return step_of(run + "/checkpoint.prev");
  return -1;
}

// Where a kill landed, as the run directory shows it.
std::string landing(const std::string& run) {
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().rfind("checkpoint.tmp-", 0) == 0) return "mid-save (temporary directory left)";
  if (fs::exists(run + "/checkpoint.prev"))
    return fs::exists(run + "/checkpoint") ? "before the old checkpoint was removed" : "between the two renames";
  return "between saves";
}

void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST(KillResume, RandomSigkillsThenResumeEqualsUninterrupted) {
  TempDir c("kill_resume");
  write_toy(c.path, "train", 400, 1);
  write_toy(c.path, "valid", 30, 2);
  const std::string opts =
      "  max_steps: 80\n  max_epochs: 0\n  valid_every: 25\n  log_every: 1\n  threads: 2\n  checkpoint_minutes: 0\n";
  // the uninterrupted run checkpoints only at validations and the end: checkpoints must not change training either
  auto config_for = [&](const std::string& run, int64_t checkpoint_every) {
    std::ofstream(run + ".yaml") << toy_config(c.path, run,
                                               opts + "  checkpoint_every: " + std::to_string(checkpoint_every) + "\n");
    return run + ".yaml";
  };
  const std::string ref = c.path + "/ref", run = c.path + "/killed";
  const auto t0 = Clock::now();
  ASSERT_EQ(wait_exit(spawn_train(config_for(ref, 0), {}, ref + ".out")), 0) << read_bytes(ref + ".out");
  const double ref_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  const std::string cfg = config_for(run, 2);
  fs::create_directories(run);
  DirWatch watch(run);
  Rng rng(20261124);
  constexpr int kKills = 40;
  int kills = 0, launches = 0, fresh_starts = 0;
  std::map<std::string, int> landings, moments;
  std::vector<std::string> expected_notes;  // what the next start must say about the last kill's leftovers
  bool finished = false;
  auto check_notes = [&](const std::string& out) {
    const std::string text = read_bytes(out);
    for (const auto& note : expected_notes) EXPECT_NE(text.find(note), std::string::npos) << out << ":\n" << text;
    expected_notes.clear();
  };
  int64_t saved_step = -1;  // the newest complete checkpoint's step: a kill must never lose it
  while (kills < kKills && !finished) {
    const bool resume = saved_step >= 0;
    fresh_starts += !resume;
    if (resume) expected_notes.push_back("at step " + std::to_string(saved_step));  // the header of a resumed run
    const std::string out = run + ".out." + std::to_string(launches++);
    watch.drain();
    Child child{spawn_train(cfg, resume ? std::vector<std::string>{"--resume"} : std::vector<std::string>{}, out)};
    const KillAt at = KillAt(rng.below(uint64_t(KillAt::kCount)));
    if (wait_for_moment(at, watch, child, rng) && (at == KillAt::kAfterLogLine || at == KillAt::kAfterSave))
      sleep_ms(int64_t(rng.below(30)));
    if (!child.exit_code) ::kill(child.pid, SIGKILL);  // not yet reaped: the pid is still this child's
    const int code = child.exit_code ? *child.exit_code : wait_exit(child.pid);
    check_notes(out);
    if (code != -SIGKILL) {
      ASSERT_EQ(code, 0) << read_bytes(out);
      finished = true;
      break;
    }
    ++kills;
    ++moments[name(at)];
    const std::string where = landing(run);
    ++landings[where];
    const int64_t now_saved = newest_step(run);
    ASSERT_GE(now_saved, saved_step) << "kill " << kills << " (" << name(at) << ", " << where
                                     << ") lost the newest complete checkpoint";
    saved_step = now_saved;
    if (where.rfind("mid-save", 0) == 0) expected_notes.push_back("left by a checkpoint save that was killed");
    if (where == "between the two renames") expected_notes.push_back("using the previous checkpoint");
  }
  if (!finished) {
    const std::string out = run + ".out.final";
    ASSERT_EQ(wait_exit(spawn_train(cfg, {"--resume"}, out)), 0) << read_bytes(out);
    check_notes(out);
  }
  const double total_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  std::cout << "[ kill-resume ] uninterrupted run " << ref_seconds << " s; " << kills << " SIGKILLs over " << launches
            << " starts (" << fresh_starts << " from scratch, no checkpoint yet), " << total_seconds
            << " s in all; the last kill left a checkpoint at step " << saved_step
            << "\n[ kill-resume ] kill moments:";
  for (const auto& [m, n] : moments) std::cout << " " << m << " x" << n << ";";
  std::cout << "\n[ kill-resume ] where they landed:";
  for (const auto& [l, n] : landings) std::cout << " " << l << " x" << n << ";";
  std::cout << "\n";

  EXPECT_EQ(kills, kKills) << "the run finished after only " << kills << " kills: make it longer";
  EXPECT_GT(landings["mid-save (temporary directory left)"], 0) << "no kill landed inside a checkpoint save";
  for (const char* f : {"/checkpoint/model.safetensors", "/checkpoint/optimizer.safetensors", "/model.safetensors"})
    EXPECT_TRUE(same_tensors(ref + f, run + f)) << f << " differs from the uninterrupted run's";
  EXPECT_EQ(step_of(run + "/checkpoint"), step_of(ref + "/checkpoint"));
  EXPECT_EQ(landing(run), "between saves") << "the finished run left no checkpoint leftovers";
  EXPECT_NO_THROW(viz::read_training_log(run + "/log.jsonl")) << "every line of the killed run's log is whole";
}
