// `attn train --config FILE.yaml [--set key=value ...] [--resume]`
#include <csignal>

#include "attn/cli/commands.h"
#include "attn/train/mt_trainer.h"

namespace attn::cli {
namespace {
std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }
}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train a translation model from a YAML config (Ctrl-C checkpoints and stops)");
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
    std::signal(SIGINT, on_sigint);
    const train::TrainSummary sum = train::train_translation(cfg, run);
    std::signal(SIGINT, SIG_DFL);
    // Not 0: a script running `attn train` then decoding (scripts/quickstart.sh)
    // must not carry on as if training had finished. 130 is the shell's code for Ctrl-C.
    if (!sum.completed && g_stop.load()) throw CLI::RuntimeError(130);
  });
}

}  // namespace attn::cli
