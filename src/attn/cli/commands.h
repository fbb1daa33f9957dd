// Each subcommand registers itself on the app with its options and callback.
#pragma once
#include <CLI/CLI.hpp>

namespace attn::cli {
void add_demo_command(CLI::App& app);
void add_bench_command(CLI::App& app);
}  // namespace attn::cli
