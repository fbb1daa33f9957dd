// attn: the command. Thin: parses options and calls the layers.
#include <CLI/CLI.hpp>
#include <iostream>

#include "attn/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"attn: attention models in C++ - train, run, and see the attention"};
  app.require_subcommand(1);
  attn::cli::add_demo_command(app);
  attn::cli::add_vocab_command(app);
  attn::cli::add_train_command(app);
  attn::cli::add_translate_command(app);
  attn::cli::add_score_command(app);
  attn::cli::add_average_command(app);
  attn::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "attn: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
