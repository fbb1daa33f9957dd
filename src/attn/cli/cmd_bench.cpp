#include <iostream>
#include <set>

#include "attn/bench/bench.h"
#include "attn/cli/commands.h"

namespace attn::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "benchmarks: JSON lines on stdout, peers measured in the same run");
  auto opt = std::make_shared<bench::BenchOptions>();
  auto suites = std::make_shared<std::vector<std::string>>();
  opt->peer_dir = std::string(ATTN_SOURCE_DIR) + "/bench/peers";
  cmd->add_option("suites", *suites, "what to run: gemm, gru, attention (default: all)");
  cmd->add_option("--threads", opt->threads, "threads for us and for the peer")->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "timed calls per figure (median reported)")->capture_default_str();
  cmd->add_flag("!--no-peers", opt->run_peers, "skip the PyTorch peer");
  cmd->add_flag("--large", opt->large, "also the long shapes (minutes)");
  cmd->add_option("--python", opt->python, "interpreter with python3-torch")->capture_default_str();
  cmd->callback([opt, suites] {
    std::set<std::string> want(suites->begin(), suites->end());
    auto run = [&](const std::string& name) { return want.empty() || want.count(name); };
    for (const auto& s : want)
      if (s != "gemm" && s != "gru" && s != "attention")
        throw std::invalid_argument("bench: unknown suite '" + s + "' (gemm, gru, attention)");
    if (run("gemm")) bench::bench_gemm(*opt);
    if (run("gru")) bench::bench_gru(*opt);
    if (run("attention")) bench::bench_attention(*opt);
  });
}

}  // namespace attn::cli
