// A run's checkpoint as one atomic unit: RUN/checkpoint is replaced as a whole,
// never file by file, so a kill at any moment leaves a complete checkpoint.
//
// save_checkpoint_slot(DIR): writes a new directory DIR.tmp-PID (every file
// fsync'd, then the directory), then renames the old DIR to DIR.prev, the new
// one to DIR, fsyncs the parent and removes DIR.prev. Until the new directory
// is complete the old one stays where it was.
// resolve_checkpoint_slot(DIR): the newest complete checkpoint: DIR, or DIR.prev
// when a save was killed between its two renames.
// clean_checkpoint_slot(DIR): removes what killed saves left (DIR.tmp-*, and
// DIR.prev once DIR is complete).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn/train/checkpoint.h"

namespace attn::train {

void save_checkpoint_slot(const std::string& dir, const CheckpointSave& what);

// The complete checkpoint directory to load (DIR, else DIR.prev), or none.
// `note` is called with a message when it falls back to DIR.prev.
std::optional<std::string> resolve_checkpoint_slot(const std::string& dir,
                                                   const std::function<void(const std::string&)>& note = {});

// Removes leftovers of killed saves; returns the paths removed.
std::vector<std::string> clean_checkpoint_slot(const std::string& dir);

namespace detail {
// Test hook: called with the stage name ("written", "old_moved", "new_moved")
// after each step of save_checkpoint_slot, so a test can stop a save there.
extern std::function<void(const char* stage)> checkpoint_slot_hook;
}  // namespace detail

}  // namespace attn::train
