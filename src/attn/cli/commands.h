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
void add_quantize_command(CLI::App& app);
void add_shortlist_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_serve_command(CLI::App& app);
// `attn caption`: the group, returned so that its subcommands can be added to it
CLI::App* add_caption_command(CLI::App& app);
void add_caption_data_commands(CLI::App& caption);  // `attn caption data`, `attn caption sheet`
void add_caption_eval_command(CLI::App& caption);   // `attn caption eval`

// All lines of stdin (data::read_lines: plain or gzip; "stdin:<line>: ..." errors for invalid UTF-8 or NUL).
std::vector<std::string> read_stdin_lines();
}  // namespace attn::cli
