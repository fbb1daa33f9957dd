// The log of a training run. Every record is written twice from the same
// values: as a progress line for people (print) and as one JSON object per
// line in out_dir/log.jsonl for programs (plots, scripts/quickstart.sh).
//
// log.jsonl records, by "type":
//   train     step, epoch (0-based), epoch_progress [0, 1], loss (mean per target token
//             over the window), tgt_tokens_per_s, lr, elapsed_s (training time, all invocations)
//   valid     step, epoch, perplexity, bleu, best (a new best model), lr, valid_seconds,
//             elapsed_s, wall_s (this invocation's wall time)
//   skipped   step, epoch, nonfinite ("loss" or "gradient norm"), value ("nan", "inf" or "-inf"):
//             a step whose update was skipped because that figure was not finite
//   finished  reason, step, epoch, elapsed_s, wall_s, best_bleu (when validated); the last line
//             of a run that completed
#pragma once
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include "attn/train/run_data.h"
#include "attn/train/schedule.h"

namespace attn::train {

struct ProgressRecord {
  int64_t step = 0, epoch = 0;
  double epoch_progress = 0;  // share of the epoch's batches done
  double loss = 0;            // mean loss per target token over the window
  double tgt_tokens_per_s = 0;
  double lr = 0;
  double elapsed_s = 0;       // training time so far
  double seconds_left = 0;    // to the nearest budget limit (infinity: none); printed only
};

struct ValidationRecord {
  int64_t step = 0, epoch = 0;
  Validation figures;
  int beam = 1;               // the beam of the BLEU decoding
  bool best = false;
  double lr = 0;
  double elapsed_s = 0, wall_s = 0;
  std::string note;           // "new best, saved", "2 without improvement, lr -> ..."; printed only
};

struct FinishedRecord {
  std::string reason;         // the schedule's stop reason, or "interrupted"
  int64_t step = 0, epoch = 0;
  double elapsed_s = 0, wall_s = 0;
  std::optional<double> best_bleu, best_perplexity;
  double run_tokens_per_s = 0, run_seconds = 0;  // this invocation's training throughput; printed only
};

class TrainLog {
public:
  // Opens out_dir/log.jsonl, truncated for a new run, appended to when resuming.
  TrainLog(const std::string& out_dir, bool resume, PrintFn print);
  // A log that prints and writes nothing: the ranks other than 0 of a
  // data-parallel run (rank 0 alone logs).
  TrainLog();

  void message(const std::string& line) const { print_(line); }  // printed, not logged
  void progress(const ProgressRecord& r);
  void validation(const ValidationRecord& r);
  // A step whose update was skipped: `what` ("loss", "gradient norm") was `value` (NaN or +-inf).
  void skipped(int64_t step, int64_t epoch, const std::string& what, double value);
  // Prints the run's last line; a completed run also logs its "finished" record.
  void finished(const FinishedRecord& r, bool completed);

private:
  void append(const std::string& json_line);
  std::string path_;
  std::ofstream out_;
  PrintFn print_;
};

// "nan", "inf" or "-inf" for a non-finite value (JSON has none of them; %g prints "-nan").
const char* nonfinite_name(double value);

// "12m05s" / "1h02m" ("?" for a negative or infinite time).
std::string hms(double seconds);

}  // namespace attn::train
