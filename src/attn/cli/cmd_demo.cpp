// `attn demo`: the quick start's main job for now. Trains the toy GRU
// encoder-decoder to reverse digit strings and prints progress and results.
#include <cstdio>

#include "attn/cli/commands.h"
#include "attn/tensor/threading.h"
#include "attn/train/toy_trainer.h"

namespace attn::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "train a small GRU encoder-decoder to reverse digit strings");
  auto opt = std::make_shared<train::ToyTrainOptions>();
  auto threads = std::make_shared<int>(0);
  cmd->add_option("--steps", opt->steps, "optimizer steps")->capture_default_str();
  cmd->add_option("--batch", opt->batch, "sentences per step")->capture_default_str();
  cmd->add_option("--max-len", opt->max_len, "longest digit string")->capture_default_str();
  cmd->add_option("--hidden", opt->model.hidden, "GRU hidden size")->capture_default_str();
  cmd->add_option("--lr", opt->lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--seed", opt->seed, "random seed")->capture_default_str();
  cmd->add_option("--threads", *threads, "threads (0: all cores)")->capture_default_str();
  cmd->callback([opt, threads] {
    set_num_threads(*threads);
    std::printf("attn demo: reverse digit strings of length %d-%d with a GRU encoder-decoder (hidden %lld), "
                "%d steps of %lld, %d threads\n",
                opt->min_len, opt->max_len, (long long)opt->model.hidden, opt->steps, (long long)opt->batch,
                num_threads());
    auto result = train::train_toy_reverse(*opt, [&](const train::ToyProgress& p) {
      std::printf("step %5d/%d  loss %.4f  %8.0f tgt tok/s  held-out exact %5.1f%%  %6.1fs\n", p.step, opt->steps,
                  p.loss, p.tokens_per_s, 100 * p.eval_accuracy, p.elapsed_s);
      std::fflush(stdout);
    });
    std::printf("\nheld-out examples (source -> model output, expected):\n");
    for (const auto& e : result.examples)
      std::printf("  %-10s -> %-10s (%s) %s\n", e.source.c_str(), e.output.c_str(), e.expected.c_str(),
                  e.output == e.expected ? "ok" : "WRONG");
    std::printf("held-out exact-match accuracy: %.1f%%\n", 100 * result.eval_accuracy);
  });
}

}  // namespace attn::cli
