// `attn train --config FILE.yaml [--set key=value ...] [--resume]`
#include <csignal>

#include "attn/cli/commands.h"
#include "attn/train/mt_trainer.h"

namespace attn::cli {
namespace {
// The signals that ask a run to checkpoint and stop: Ctrl-C, `kill`, container
// stops (SIGTERM) and a closed terminal (SIGHUP).
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true);
}
}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "train", "train a translation model from a YAML config (Ctrl-C, SIGTERM or SIGHUP checkpoints and stops)");
  struct Opts {
    std::string config;
    std::vector<std::string> sets;
    bool resume = false;
    int64_t stop_after = 0;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("-c,--config", o->config, "YAML config (sections data, vocab, model, train)")->required();
  cmd->add_option("--set", o->sets, "override a config value: section.key=value (repeatable)");
  cmd->add_flag("--resume", o->resume, "continue the run in train.out_dir from its checkpoint");
  cmd->add_option("--stop-after-steps", o->stop_after, "checkpoint and stop after this many steps of this invocation");
  cmd->callback([o] {
    train::TrainConfig cfg = train::load_train_config(o->config, o->sets);
    train::RunOptions run;
    run.resume = o->resume;
    run.stop_after_steps = o->stop_after;
    run.stop = &g_stop;
    for (int sig : kStopSignals) std::signal(sig, on_stop_signal);
    const train::TrainSummary sum = train::train_translation(cfg, run);
    for (int sig : kStopSignals) std::signal(sig, SIG_DFL);
    // Not 0: a script running `attn train` then decoding (scripts/quickstart.sh)
    // must not carry on as if training had finished. 128 + the signal number,
    // as the shell reports a process killed by it (130 for Ctrl-C, 143 for SIGTERM).
    if (!sum.completed && g_stop.load()) throw CLI::RuntimeError(128 + int(g_signal));
  });
}

}  // namespace attn::cli
