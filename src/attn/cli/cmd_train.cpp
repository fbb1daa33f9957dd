// `attn train --config FILE.yaml [--set key=value ...] [--resume]`, alone or
// as every rank of `mpirun -np N attn train ...` (docs/distributed-training.md)
#include <csignal>
#include <memory>

#include "attn/cli/commands.h"
#include "attn/dist/world.h"
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
    // under mpirun: this process is one rank of a data-parallel run
    std::unique_ptr<dist::World> world = dist::join_world(cfg.train.dist_timeout_s);
    train::RunOptions run;
    run.resume = o->resume;
    run.stop_after_steps = o->stop_after;
    run.stop = &g_stop;
    run.collective = world ? &world->ranks() : nullptr;
    for (int sig : kStopSignals) std::signal(sig, on_stop_signal);
    train::TrainSummary sum;
    try {
      sum = train::train_translation(cfg, run);
    } catch (const std::exception& e) {
      // the other ranks would wait for this one until their deadline: end them all now, naming this rank
      if (world && world->ranks().size() > 1) world->abort(e.what(), 1);
      throw;
    }
    for (int sig : kStopSignals) std::signal(sig, SIG_DFL);
    world.reset();  // every rank leaves the job together (MPI_Finalize), rank 0 after its last checkpoint
    // Not 0: a script running `attn train` then decoding (scripts/quickstart.sh)
    // must not carry on as if training had finished. 128 + the signal number,
    // as the shell reports a process killed by it (130 for Ctrl-C, 143 for SIGTERM).
    if (!sum.completed && g_stop.load()) throw CLI::RuntimeError(128 + int(g_signal));
  });
}

}  // namespace attn::cli
