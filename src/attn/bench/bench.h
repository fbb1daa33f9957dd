// Benchmarks: programs, never timed tests. Each prints one JSON object per line
// to stdout; `attn bench` runs them and, where a peer is named, runs the peer
// (PyTorch, in its best configuration per PEERS.md) in the same run.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::bench {

struct BenchOptions {
  int threads = 2;          // our thread count, and the peer's
  int repeats = 10;         // timed calls after warm-up; the median is reported
  bool run_peers = true;    // also run the PyTorch peer scripts
  std::string python = "/usr/bin/python3";  // interpreter that has python3-torch
  std::string peer_dir;     // folder of the peer scripts (find_peer_dir)
  bool large = false;       // also the long shapes (attention: L=4096 and L=16384; minutes)
  // train/decode batches (bench_mt.cpp): "mixed" lengths 8..20 in one batch, or
  // "uniform" (14 each, as the trainer's length-sorted batches are)
  std::string lengths = "mixed";
  // decode: the searches' compute types (--compute: fp32, int8, bf16), one figure each
  std::vector<std::string> computes = {"fp32"};
  // decode: with shortlist K > 0, every compute type is measured again with a
  // vocabulary shortlist (decode/shortlist.h) of K translations per source
  // piece and the shortlist_frequent most frequent targets, from the lexicon
  // and vocabularies of the run shortlist_run; every figure's sources then
  // take their pieces from that run's validation sentences (in the bench's
  // lengths), so that the candidate sets are those of real text
  int64_t shortlist = 0;
  int64_t shortlist_frequent = 100;
  std::string shortlist_run;
};

// Median wall time of `fn` in milliseconds over opt.repeats calls after `warmup` calls.
double median_ms(const std::function<void()>& fn, int repeats, int warmup = 2);

// Prints `j` as one line and flushes (so a long run streams its results).
void emit(const nlohmann::json& j);

// 'text' for /bin/sh, so that an install prefix with spaces or quotes still runs
std::string shell_quote(const std::string& text);

// Runs `cmd` in a shell and echoes (and returns) the JSON lines it prints; other
// lines go to stderr prefixed with `who`, a failure is emitted as {"impl": who, "error": ..}.
std::vector<nlohmann::json> run_lines(const std::string& cmd, const std::string& who);

// What every figure is measured on: CPU model, instruction set in use and
// detected, the BLAS with its core type and who chose it.
nlohmann::json machine_record();

// The folder of the peer scripts: `requested` when not empty (--peer-dir), else
// the installed one beside the running command (<bin>/../share/attn/peers, found
// from /proc/self/exe, so a moved install prefix still finds its own), else the
// source tree's bench/peers (the command run from the build tree). Throws
// std::runtime_error naming every folder tried when none of them exists.
std::string find_peer_dir(const std::string& requested);

// Runs a peer script with PyTorch's best environment (tcmalloc preloaded,
// OPENBLAS_THREAD_TIMEOUT=4, OMP_WAIT_POLICY=passive, our OPENBLAS_CORETYPE, and
// ATEN_CPU_CAPABILITY at our instruction set) and echoes its JSON lines.
// Returns the parsed lines; a failing peer is reported as {"bench":..,"impl":"torch","error":..}.
std::vector<nlohmann::json> run_peer(const BenchOptions& opt, const std::string& script, const std::string& args);

// The suites.
// sgemm GFLOP/s at n = 1024, 2048 through attn's BLAS, beside (run_peers) the same
// OpenBLAS with OPENBLAS_CORETYPE set explicitly to the CPU's best core, in a child process
void bench_gemm(const BenchOptions& opt);
// sgemm GFLOP/s through attn's BLAS, C [m, n] = A [m, k] B [k, n]: the median of
// `repeats` calls after about `warmup_seconds` of calls
double sgemm_gflops(int64_t m, int64_t n, int64_t k, int repeats, double warmup_seconds);
void bench_gru(const BenchOptions& opt);
// int8 / bf16 products on the decoder steps' shapes: attn's kernels beside
// oneDNN's gemm_u8s8s32 and matmul primitive (bench_quant.cpp), in us and GOP/s
void bench_quant(const BenchOptions& opt);
// conv2d forward + backward per layer of the CNN encoder (batch 32, 64x64 images)
// beside the same GEMMs alone (bench_conv.cpp); no peer
void bench_conv(const BenchOptions& opt);    // GRU layer fwd+bwd, batch 64, hidden 512, len 30, vs torch
void bench_attention(const BenchOptions& opt);  // SDPA fused/naive, MHA, additive step, vs torch
// the model shapes of bench_mt_train / bench_mt_decode ("lean", "tutorial", "luong", "transformer":
// bench_mt.cpp's presets, each a model config and its PyTorch peer)
std::vector<std::string> mt_presets();
// translation training step (fwd + bwd + clip + Adam): target tokens/s per shape (rnnsearch "lean",
// "tutorial"; "luong"; "transformer"; bench_mt.cpp) and batch size (sentences), vs torch
void bench_mt_train(const BenchOptions& opt, const std::vector<std::string>& shapes, const std::vector<int64_t>& batches);
// `attn serve` under load (bench_serve.cpp): what to serve and how long.
struct ServeBenchOptions {
  std::string run;                  // run directory of a trained model (-m)
  std::string input;                // sentences, one per line (default: run/test.src)
  std::vector<int> clients = {1, 8, 32};
  int64_t requests = 2000;          // answers per (batching, clients) run, at most...
  double seconds = 20;              // ...and at most this long
  int beam = 1;
};
// requests/s, p50/p99 latency, errors, RSS of the server batched (max batch 32)
// and unbatched (1), per number of concurrent clients on loopback
void bench_serve(const BenchOptions& opt, const ServeBenchOptions& serve);
// The process's resident set now (/proc/self/statm), in bytes.
size_t rss_current_bytes();

// translation greedy / beam decoding: sentences/s per shape (as bench_mt_train), batch size and beam, vs torch
void bench_mt_decode(const BenchOptions& opt, const std::vector<std::string>& shapes, const std::vector<int64_t>& batches,
                     const std::vector<int>& beams);

}  // namespace attn::bench
