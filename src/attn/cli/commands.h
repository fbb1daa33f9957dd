// Each subcommand registers itself on the app with its options and callback.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace attn::cli {
void add_demo_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_vocab_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_translate_command(CLI::App& app);
void add_explain_command(CLI::App& app);
void add_score_command(CLI::App& app);
void add_average_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_serve_command(CLI::App& app);

// All lines of stdin (data::read_lines: plain or gzip; "stdin:<line>: ..." errors for invalid UTF-8 or NUL).
std::vector<std::string> read_stdin_lines();
}  // namespace attn::cli
