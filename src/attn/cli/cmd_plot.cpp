// `attn plot RUN -o curves.png [--x step|time]`: a run's training curves
// (training loss, validation perplexity, validation BLEU) from RUN/log.jsonl.
#include <filesystem>

#include "attn/cli/commands.h"
#include "attn/viz/curves.h"

namespace attn::cli {

void add_plot_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("plot", "draw a run's training curves (loss, validation perplexity and BLEU)");
  struct Opts {
    std::string run, output, x = "step", title;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("run", o->run, "run directory written by `attn train` (reads RUN/log.jsonl), or a log.jsonl file")
      ->required();
  cmd->add_option("-o,--output", o->output, "figure to write: .png, .svg or .pdf")->required();
  cmd->add_option("--x", o->x, "horizontal axis: optimizer step or training time")
      ->check(CLI::IsMember({"step", "time"}))
      ->capture_default_str();
  cmd->add_option("--title", o->title, "title above the panels (default: the run's path)");
  cmd->callback([o] {
    const std::string log = std::filesystem::is_directory(o->run) ? o->run + "/log.jsonl" : o->run;
    const viz::TrainingCurves curves = viz::read_training_log(log);
    viz::write_curves(o->output, curves, o->x == "time" ? viz::CurveAxis::Time : viz::CurveAxis::Step,
                      o->title.empty() ? o->run : o->title);
  });
}

}  // namespace attn::cli
