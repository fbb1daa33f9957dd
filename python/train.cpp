// attn.train: the trainer of `attn train --config FILE --set k=v` (train/mt_trainer.h)
// run from Python, its progress lines handed to a Python callable, and Ctrl-C
// handled as the command does (cli/cmd_train.cpp): SIGINT (and SIGTERM) set the
// trainer's stop flag, the run writes its checkpoint and returns, and then
// KeyboardInterrupt is raised. Python's own SIGINT handler only runs once C++
// returns to the interpreter, which a training run does not do for hours: so
// for the call's duration a C handler replaces it (main thread only, where
// Python lets signal handlers be; another thread trains without one).
#include <pybind11/stl.h>

#include <atomic>
#include <csignal>
#include <optional>

#include "attn/train/mt_trainer.h"
#include "bindings.h"

namespace attn::python {

namespace {

std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true);
}

constexpr int kStopSignals[] = {SIGINT, SIGTERM};

// Installs on_stop_signal for the scope (when on the main thread), then puts
// the previous handlers (Python's) back.
class StopSignals {
public:
  explicit StopSignals(bool install) : installed_(install) {
    g_stop.store(false);
    g_signal = 0;
    if (!installed_) return;
    for (size_t i = 0; i < std::size(kStopSignals); ++i) previous_[i] = std::signal(kStopSignals[i], on_stop_signal);
  }
  ~StopSignals() {
    if (!installed_) return;
    for (size_t i = 0; i < std::size(kStopSignals); ++i) std::signal(kStopSignals[i], previous_[i]);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

private:
  bool installed_;
  void (*previous_[std::size(kStopSignals)])(int) = {};
};

// {"train.max_steps": 40} -> "train.max_steps=40", the command's --set form;
// True / False as YAML's true / false.
std::vector<std::string> set_lines(const py::dict& overrides) {
  std::vector<std::string> sets;
  for (const auto& [key, value] : overrides) {
    if (!py::isinstance<py::str>(key)) throw py::type_error("train: overrides' keys must be str (\"section.key\")");
    const std::string v = py::isinstance<py::bool_>(value) ? (value.cast<bool>() ? "true" : "false")
                                                           : std::string(py::str(value));
    sets.push_back(key.cast<std::string>() + "=" + v);
  }
  return sets;
}

py::dict summary_dict(const train::TrainSummary& s) {
  py::dict d;
  d["steps"] = s.steps;
  d["epoch"] = s.epoch;
  d["completed"] = s.completed;
  d["stop_reason"] = s.stop_reason;
  d["best_bleu"] = s.best_bleu ? py::cast(*s.best_bleu) : py::none();
  d["best_perplexity"] = s.best_perplexity ? py::cast(*s.best_perplexity) : py::none();
  d["last_bleu"] = s.last_bleu ? py::cast(*s.last_bleu) : py::none();
  d["tgt_tokens_per_s"] = s.tgt_tokens_per_s;
  d["train_seconds"] = s.train_seconds;
  return d;
}

constexpr const char* kTrainDoc = R"(Trains a model as `attn train --config CONFIG --set key=value ...` does.

config_path: the YAML config (sections data, vocab, model, train; docs/training.md);
overrides: {"section.key": value}, e.g. {"train.max_steps": 100}; resume: continue
the run in train.out_dir from its checkpoint; stop_after_steps: checkpoint and
stop after this many steps of this call (0: off). progress: called with each
progress line (default: print; None: silent). Ctrl-C (SIGINT) or SIGTERM
during the call, from the main thread, checkpoints the run and then raises
KeyboardInterrupt (resume=True continues it). Returns a dict: steps, epoch,
completed, stop_reason, best_bleu, best_perplexity, last_bleu, tgt_tokens_per_s,
train_seconds. ValueError names a bad config key or value; RuntimeError a file.)";

}  // namespace

void add_train(py::module_& m) {
  m.def(
      "train",
      [](const std::string& config_path, const py::object& overrides, bool resume, int64_t stop_after_steps,
         const py::object& progress) {
        const std::vector<std::string> sets =
            overrides.is_none() ? std::vector<std::string>{} : set_lines(overrides.cast<py::dict>());
        train::TrainConfig cfg = train::load_train_config(config_path, sets);
        train::RunOptions run;
        run.resume = resume;
        run.stop_after_steps = stop_after_steps;
        run.stop = &g_stop;
        if (progress.is_none()) {
          run.print = [](const std::string&) {};
        } else {
          // The trainer copies the callback and drops its copies without the
          // GIL: they share one reference, dropped under the GIL.
          std::shared_ptr<py::object> fn(new py::object(progress), [](py::object* p) {
            py::gil_scoped_acquire gil;
            delete p;
          });
          run.print = [fn](const std::string& line) {
            py::gil_scoped_acquire gil;
            (*fn)(line);
          };
        }
        const bool main_thread = py::module_::import("threading").attr("current_thread")().is(
            py::module_::import("threading").attr("main_thread")());
        train::TrainSummary sum;
        {
          StopSignals signals(main_thread);
          py::gil_scoped_release nogil;
          sum = train::train_translation(cfg, run);
        }
        if (!sum.completed && g_stop.load()) {
          if (g_signal == SIGINT) {
            PyErr_SetNone(PyExc_KeyboardInterrupt);
            throw py::error_already_set();
          }
          throw std::runtime_error("train: stopped by signal " + std::to_string(int(g_signal)) + " (checkpoint written)");
        }
        return summary_dict(sum);
      },
      kTrainDoc, py::arg("config_path"), py::arg("overrides") = py::none(), py::kw_only(), py::arg("resume") = false,
      py::arg("stop_after_steps") = 0,
      py::arg("progress") = py::module_::import("builtins").attr("print"));
}

}  // namespace attn::python
