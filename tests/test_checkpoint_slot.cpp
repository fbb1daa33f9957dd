// A run's checkpoint replaced as one unit (train/checkpoint_slot.h): a save
// stopped after each of its steps (by a test hook that throws there, leaving
// the disk as a kill at that moment would) always leaves the newest complete
// checkpoint loadable, its leftovers are cleaned, a run resumes from it bit for
// bit; and a run directory is locked against a second writer.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>


#include <filesystem>

#include "attn/train/checkpoint_slot.h"
#include "attn/train/mt_trainer.h"
#include "attn/train/run_lock.h"
#include "toy_run.h"
#include "train_test_util.h"

using namespace attn;
using namespace attn::testing;
namespace fs = std::filesystem;

namespace {

const char* kSlotConfig = R"({"in": 5, "hidden": 4, "out": 3})";

struct StopSave {};  // thrown by the hook: the save stops there

// Installs a hook that stops a save after `stage`; removed on destruction.
struct StopAt {
  explicit StopAt(std::string stage) {
    train::detail::checkpoint_slot_hook = [stage](const char* s) {
      if (stage == s) throw StopSave{};
    };
  }
  ~StopAt() { train::detail::checkpoint_slot_hook = nullptr; }
};

void save(const std::string& dir, const TinyNet& m, int64_t step) {
  train::CheckpointSave cs;
  cs.model = &m;
  cs.config_json = kSlotConfig;
  cs.trainer.step = step;
  train::save_checkpoint_slot(dir, cs);
}

}  // namespace

TEST(CheckpointSlot, SaveStoppedAtEachStageLeavesNewestCompleteCheckpoint) {
  struct Case {
    const char* stage;
    int64_t expect_step;  // the checkpoint that must load afterwards
  };
  for (Case c : {Case{"written", 1}, Case{"old_moved", 1}, Case{"new_moved", 2}}) {
    SCOPED_TRACE(c.stage);
    TempDir tmp("ckpt_slot");
    const std::string dir = tmp.path + "/checkpoint";
    TinyNet old_net(5, 4, 3, 1), new_net(5, 4, 3, 2), loaded(5, 4, 3, 3);
    save(dir, old_net, 1);
    {
      StopAt stop(c.stage);
      EXPECT_THROW(save(dir, new_net, 2), StopSave);
    }
    std::string note;
    auto found = train::resolve_checkpoint_slot(dir, [&](const std::string& s) { note = s; });
    ASSERT_TRUE(found.has_value());
    train::LoadedCheckpoint lc = train::load_checkpoint(*found, {&loaded, nullptr});
    EXPECT_EQ(lc.trainer.step, c.expect_step);
    EXPECT_TRUE(params_bit_equal(loaded, c.expect_step == 1 ? old_net : new_net));
    EXPECT_EQ(note.empty(), std::string(c.stage) != "old_moved") << note;  // says when it falls back

    // the leftovers go; the checkpoint found stays loadable; the next save works
    const auto removed = train::clean_checkpoint_slot(dir);
    EXPECT_FALSE(removed.empty());
    for (const auto& e : fs::directory_iterator(tmp.path)) {
      const std::string name = e.path().filename().string();
      EXPECT_TRUE(name == "checkpoint" || (name == "checkpoint.prev" && !fs::exists(dir))) << name;
    }
    ASSERT_TRUE(train::resolve_checkpoint_slot(dir).has_value());
    save(dir, new_net, 3);
    EXPECT_EQ(train::load_checkpoint(dir, {&loaded, nullptr}).trainer.step, 3);
    EXPECT_FALSE(fs::exists(dir + ".prev"));
  }
}

// A save failing while it writes (in a child process whose file size limit,
// RLIMIT_FSIZE, makes the model file's write fail with EFBIG as a full disk
// would) leaves the previous checkpoint as it was, no temporary directory,
// and says so.
TEST(CheckpointSlot, FailedWriteKeepsPreviousCheckpoint) {
  TempDir tmp("ckpt_slot_fail");
  const std::string dir = tmp.path + "/checkpoint";
  TinyNet a(5, 4, 3, 1), b(5, 4, 3, 2), loaded(5, 4, 3, 3);
  save(dir, a, 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing
    rlimit lim{64, 64};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    // exit 2: failed and said the previous checkpoint is intact; 3: failed otherwise; 0: saved
    try {
      save(dir, b, 2);
    } catch (const std::exception& e) {
      ::_exit(std::string(e.what()).find("the previous one is intact") != std::string::npos ? 2 : 3);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2) << "0: the save did not fail; 3: its message does not say the previous one is intact";
  EXPECT_EQ(train::load_checkpoint(dir, {&loaded, nullptr}).trainer.step, 1);
  EXPECT_TRUE(params_bit_equal(loaded, a));
  EXPECT_TRUE(train::clean_checkpoint_slot(dir).empty()) << "nothing left behind";
}

TEST(RunLock, SecondWriterFailsNamingDirectoryAndHolder) {
  TempDir tmp("run_lock");
  const std::string run = tmp.path + "/run";
  {
    train::RunLock first(run);
    try {
      train::RunLock second(run);  // another open file description: flock conflicts as with another process
      ADD_FAILURE() << "the second lock should fail";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(run), std::string::npos) << msg;
      EXPECT_NE(msg.find("pid " + std::to_string(::getpid())), std::string::npos) << msg;
    }
  }
  EXPECT_NO_THROW(train::RunLock again(run)) << "released when its holder ends";
}

// A resume whose save at step 8 was stopped between its two renames (no
// checkpoint/, checkpoint.prev/ from step 7, the temporary directory of step
// 8 beside them) resumes from step 7 and ends with the same parameters, bit
// for bit, as the run that was never interrupted.
TEST(CheckpointSlot, ResumeAfterStoppedSaveEqualsUninterrupted) {
  TempDir c("ckpt_slot_resume");
  write_toy(c.path, "train", 400, 1);
  write_toy(c.path, "valid", 30, 2);
  const std::string opts = "  max_steps: 16\n  max_epochs: 0\n  valid_every: 8\n  log_every: 5\n  threads: 2\n";
  auto config = [&](const std::string& out) { return train::parse_train_config(toy_config(c.path, out, opts)); };
  std::vector<std::string> lines;
  train::RunOptions ro;
  ro.print = [&](const std::string& s) { lines.push_back(s); };
  const std::string a = c.path + "/a", b = c.path + "/b";
  ASSERT_EQ(train::train_translation(config(a), ro).steps, 16);
  train::RunOptions stop = ro;
  stop.stop_after_steps = 7;
  EXPECT_FALSE(train::train_translation(config(b), stop).completed);
  {
    StopAt at("old_moved");
    stop.resume = true;
    stop.stop_after_steps = 0;
    EXPECT_THROW(train::train_translation(config(b), stop), StopSave);
  }
  ASSERT_FALSE(fs::exists(b + "/checkpoint"));
  ASSERT_TRUE(fs::exists(b + "/checkpoint.prev"));
  EXPECT_THROW(train::train_translation(config(b), ro), std::runtime_error) << "a plain run still refuses it";
  lines.clear();
  train::RunOptions resume = ro;
  resume.resume = true;
  EXPECT_EQ(train::train_translation(config(b), resume).steps, 16);
  bool said = false;
  for (const auto& l : lines) said = said || l.find("checkpoint.prev") != std::string::npos;
  EXPECT_TRUE(said) << "the resume says it fell back to checkpoint.prev";
  EXPECT_TRUE(same_tensors(a + "/checkpoint/model.safetensors", b + "/checkpoint/model.safetensors"));
  EXPECT_TRUE(same_tensors(a + "/checkpoint/optimizer.safetensors", b + "/checkpoint/optimizer.safetensors"));
  for (const auto& e : fs::directory_iterator(b))
    EXPECT_EQ(e.path().filename().string().find("checkpoint."), std::string::npos) << "leftover " << e.path();
}
