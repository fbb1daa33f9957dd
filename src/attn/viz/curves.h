// Training curves of a run: its log.jsonl (train/train_log.h) read back and
// drawn as one figure of three panels against step or training time:
// training loss, validation perplexity, validation BLEU.
#pragma once
#include <string>
#include <vector>

namespace attn::viz {

struct CurvePoint {
  double step = 0;     // optimizer step of the record
  double time_s = 0;   // "elapsed_s": training time so far, over every resumed invocation
  double value = 0;
};

struct TrainingCurves {
  std::vector<CurvePoint> loss;        // "train" records: mean loss per target token over the window
  std::vector<CurvePoint> perplexity;  // "valid" records
  std::vector<CurvePoint> bleu;        // "valid" records that carry a BLEU
};

// Reads a log.jsonl: one JSON object per line with a "type". "train" needs
// numeric step, loss and elapsed_s; "valid" numeric step and elapsed_s, and
// perplexity and bleu each a number, null or absent (then not plotted); other
// types ("finished", ...) are skipped, as are blank lines. Throws
// std::invalid_argument "<path>:<line>: <problem>" for a malformed line and
// std::runtime_error when the file cannot be read.
TrainingCurves read_training_log(const std::string& path);

enum class CurveAxis { Step, Time };

// Draws the three panels (a panel whose series is empty says so instead) to
// `path`: .png, .svg or .pdf by its extension, replaced atomically. Time is
// shown in seconds, minutes or hours, whichever fits the run. Throws
// std::invalid_argument for another extension.
void write_curves(const std::string& path, const TrainingCurves& curves, CurveAxis x, const std::string& title = "");

}  // namespace attn::viz
