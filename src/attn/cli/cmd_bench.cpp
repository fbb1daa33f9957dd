#include <algorithm>
#include <iostream>
#include <set>

#include "attn/bench/bench.h"
#include "attn/cli/commands.h"

namespace attn::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "benchmarks: JSON lines on stdout, peers measured in the same run");
  auto opt = std::make_shared<bench::BenchOptions>();
  auto suites = std::make_shared<std::vector<std::string>>();
  auto peer_dir = std::make_shared<std::string>();
  auto print_peer_dir = std::make_shared<bool>(false);
  cmd->add_option("suites", *suites,
                  "what to run: gemm, gru, attention, train, decode, conv (default: these six), serve (needs -m), "
                  "quant (attn's int8 / bf16 products against oneDNN's)");
  auto serve = std::make_shared<bench::ServeBenchOptions>();
  cmd->add_option("-m,--run", serve->run, "serve: run directory of the model to serve");
  cmd->add_option("--serve-input", serve->input, "serve: sentences, one per line (default: RUN/test.src)");
  cmd->add_option("--clients", serve->clients, "serve: concurrent clients")->capture_default_str();
  cmd->add_option("--serve-requests", serve->requests, "serve: answers per run, at most")->capture_default_str();
  cmd->add_option("--serve-seconds", serve->seconds, "serve: seconds per run, at most")->capture_default_str();
  cmd->add_option("--serve-beam", serve->beam, "serve: the requests' beam size")->capture_default_str();
  auto shapes = std::make_shared<std::vector<std::string>>(std::vector<std::string>{"lean"});
  auto batches = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{64});
  auto dec_batches = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{1, 64});
  auto beams = std::make_shared<std::vector<int>>(std::vector<int>{1, 5});
  cmd->add_option("--model", *shapes, "train/decode: model shapes, rnnsearch lean and/or tutorial, luong, transformer")
      ->capture_default_str();
  cmd->add_option("--batch", *batches, "train: sentences per batch, one or more")->capture_default_str();
  cmd->add_option("--decode-batch", *dec_batches, "decode: batch sizes")->capture_default_str();
  cmd->add_option("--beam", *beams, "decode: beam sizes (1: greedy)")->capture_default_str();
  cmd->add_option("--threads", opt->threads, "threads for us and for the peer")->capture_default_str();
  cmd->add_option("--lengths", opt->lengths,
                  "train/decode: sentence lengths in a batch, mixed (8..20) or uniform (14 each, as length-sorted "
                  "batches are)")
      ->check(CLI::IsMember({"mixed", "uniform"}))
      ->capture_default_str();
  cmd->add_option("--shortlist", opt->shortlist,
                  "decode: also every --compute with a vocabulary shortlist of K translations per source piece "
                  "(RUN/shortlist.tsv of --shortlist-run; the sources become that run's validation pieces)")
      ->capture_default_str();
  cmd->add_option("--shortlist-frequent", opt->shortlist_frequent, "decode: the shortlist's most frequent targets")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(0), int64_t(1) << 20));
  cmd->add_option("--shortlist-run", opt->shortlist_run, "decode: the run whose lexicon, vocabularies and validation "
                  "sentences the shortlist figures use (e.g. runs/multi30k-transformer)");
  cmd->add_option("--compute", opt->computes, "decode: the searches' element types, one figure each (fp32, int8, bf16)")
      ->check(CLI::IsMember({"fp32", "int8", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--repeats", opt->repeats, "timed calls per figure (median reported)")->capture_default_str();
  cmd->add_flag("!--no-peers", opt->run_peers, "skip the PyTorch peer");
  cmd->add_flag("--large", opt->large, "also the long shapes (minutes)");
  cmd->add_option("--python", opt->python, "interpreter with python3-torch")->capture_default_str();
  cmd->add_option("--peer-dir", *peer_dir,
                  "folder of the peer scripts (default: " ATTN_PEERS_FROM_BIN
                  " beside the attn command when installed, else the source tree's bench/peers)");
  cmd->add_flag("--print-peer-dir", *print_peer_dir, "print the folder of the peer scripts that would run, and exit");
  cmd->callback([opt, suites, shapes, batches, dec_batches, beams, peer_dir, print_peer_dir, serve] {
    if (*print_peer_dir) {
      std::cout << bench::find_peer_dir(*peer_dir) << "\n";
      return;
    }
    std::set<std::string> want(suites->begin(), suites->end());
    auto run = [&](const std::string& name) { return want.empty() || want.count(name); };
    for (const auto& s : want)
      if (s != "gemm" && s != "gru" && s != "attention" && s != "train" && s != "decode" && s != "conv" && s != "serve" &&
          s != "quant")
        throw std::invalid_argument("bench: unknown suite '" + s +
                                    "' (gemm, gru, attention, train, decode, conv, serve, quant)");
    if (want.count("serve") && serve->run.empty()) throw std::invalid_argument("bench serve: needs -m RUN");
    const std::vector<std::string> presets = bench::mt_presets();
    for (const auto& m : *shapes)
      if (std::find(presets.begin(), presets.end(), m) == presets.end()) {
        std::string known;
        for (const auto& p : presets) known += (known.empty() ? "" : ", ") + p;
        throw std::invalid_argument("bench: unknown model shape '" + m + "' (" + known + ")");
      }
    const bool peers_wanted = want.empty() || want.size() > want.count("serve") + want.count("conv");  // no peer for these
    if (opt->run_peers && peers_wanted) opt->peer_dir = bench::find_peer_dir(*peer_dir);  // before minutes of our own runs
    if (run("gemm")) bench::bench_gemm(*opt);
    if (want.count("quant")) bench::bench_quant(*opt);  // only when asked: oneDNN's own products, no PyTorch peer
    if (run("gru")) bench::bench_gru(*opt);
    if (run("attention")) bench::bench_attention(*opt);
    if (run("train")) bench::bench_mt_train(*opt, *shapes, *batches);
    if (run("decode")) bench::bench_mt_decode(*opt, *shapes, *dec_batches, *beams);
    if (run("conv")) bench::bench_conv(*opt);
    if (want.count("serve")) bench::bench_serve(*opt, *serve);  // only when named: it needs a trained model
  });
}

}  // namespace attn::cli
