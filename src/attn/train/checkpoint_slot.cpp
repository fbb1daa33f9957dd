// The run's checkpoint directory replaced as a whole (see checkpoint_slot.h).
#include "attn/train/checkpoint_slot.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "attn/train/checkpoint_detail.h"

namespace attn::train {

namespace fs = std::filesystem;

namespace detail {
std::function<void(const char* stage)> checkpoint_slot_hook;
}  // namespace detail

namespace {

// trainer_state.json is written last, so its presence marks a directory whose
// files are all there; load_checkpoint checks they belong together.
bool complete(const std::string& dir) { return fs::exists(dir + "/trainer_state.json"); }

void stage(const char* name) {
  if (detail::checkpoint_slot_hook) detail::checkpoint_slot_hook(name);
}

// Makes the renames inside `dir` durable.
void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void rename_or_throw(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw std::runtime_error(from + ": cannot rename to " + to + ": " + ec.message());
}

}  // namespace

void save_checkpoint_slot(const std::string& dir, const CheckpointSave& what) {
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  const std::string prev = dir + ".prev";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    save_checkpoint(tmp, what);  // every file fsync'd, and the folder after each
  } catch (const std::exception& e) {
    fs::remove_all(tmp, ec);
    throw std::runtime_error(dir + ": checkpoint not saved (the previous one is intact): " + e.what());
  }
  stage("written");
  const bool had_old = fs::exists(dir);
  if (had_old) {
    fs::remove_all(prev, ec);  // DIR is complete here, so DIR.prev is a leftover
    rename_or_throw(dir, prev);
  }
  stage("old_moved");
  rename_or_throw(tmp, dir);
  fsync_dir(detail::dirname(dir));
  stage("new_moved");
  fs::remove_all(prev, ec);
}

std::optional<std::string> resolve_checkpoint_slot(const std::string& dir,
                                                   const std::function<void(const std::string&)>& note) {
  if (complete(dir)) return dir;
  const std::string prev = dir + ".prev";
  if (!complete(prev)) return std::nullopt;
  if (note) note(dir + " is missing or incomplete (a save was killed): using the previous checkpoint " + prev);
  return prev;
}

std::vector<std::string> clean_checkpoint_slot(const std::string& dir) {
  std::vector<std::string> removed;
  const fs::path p(dir);
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string tmp_prefix = p.filename().string() + ".tmp-";
  std::error_code ec;
  if (fs::is_directory(parent, ec))
    for (const auto& e : fs::directory_iterator(parent, ec))
      if (e.path().filename().string().rfind(tmp_prefix, 0) == 0) removed.push_back(e.path().string());
  if (complete(dir) && fs::exists(dir + ".prev")) removed.push_back(dir + ".prev");
  for (const auto& r : removed) fs::remove_all(r, ec);
  return removed;
}

}  // namespace attn::train
