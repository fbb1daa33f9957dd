// GRU layer benchmark: forward and forward+backward of one unidirectional
// nn::GRU layer (input size = hidden size) on a full batch (every sequence
// seq_len long), median of repeated runs after warm-up. The peer is
// bench/torch_gru.py (torch.nn.GRU, same shapes, same JSON keys).
//
// bench_gru() is self-contained so that `attn bench` can take it over; main()
// only parses flags and prints the JSON line.
//
// Compare like with like: the torch peer runs with OMP_WAIT_POLICY=passive
// (shared/PEERS.md), and so should this program. libgomp reads the policy at
// load time, so it cannot be set from here; on a machine shared with other
// jobs the default (spinning) policy costs this program up to 2x, because a
// spinning idle worker takes the CPU its partner thread needs.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/autograd/ops.h"
#include "attn/nn/rnn.h"
#include "attn/tensor/threading.h"

namespace {

// Median wall time in milliseconds of `runs` calls after `warmup` calls.
double median_ms(const std::function<void()>& fn, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
}

}  // namespace

// x [batch, seq_len, hidden] -> GRU(hidden, hidden) output [batch, seq_len, hidden];
// backward seeds the output with a fixed random d(loss)/d(output), x requires grad
// (as embeddings do in an encoder). fwd_ms is the training-mode forward (recording
// the tape), fwdbwd_ms forward plus backward into every weight and x.
nlohmann::json bench_gru(int batch, int hidden, int seq_len, int threads) {
  using namespace attn;
  constexpr int kWarmup = 3, kRuns = 15;
  set_num_threads(threads);
  Rng rng(1);
  nn::RnnOptions opt;
  opt.input_size = hidden;
  opt.hidden_size = hidden;
  nn::GRU gru(opt, rng);
  Tensor x = randn(Shape{batch, seq_len, hidden}, rng).set_requires_grad();
  Tensor seed = randn(Shape{batch, seq_len, hidden}, rng);
  std::vector<int64_t> lengths(size_t(batch), seq_len);

  double fwd = median_ms([&] { GruResult r = gru.forward(x, lengths); }, kWarmup, kRuns);
  double fwdbwd = median_ms(
      [&] {
        gru.zero_grad();
        x.zero_grad();
        GruResult r = gru.forward(x, lengths);
        backward(r.output, seed);
      },
      kWarmup, kRuns);
  auto round3 = [](double v) { return double(int64_t(v * 1000.0 + 0.5)) / 1000.0; };
  return {{"bench", "gru"},        {"impl", "attn"},         {"batch", batch},
          {"hidden", hidden},      {"seq_len", seq_len},     {"threads", threads},
          {"fwd_ms", round3(fwd)}, {"fwdbwd_ms", round3(fwdbwd)}};
}

int main(int argc, char** argv) {
  int batch = 64, hidden = 512, seq_len = 30, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (f == "--batch") batch = v;
    else if (f == "--hidden") hidden = v;
    else if (f == "--seq-len") seq_len = v;
    else if (f == "--threads") threads = v;
    else {
      std::cerr << "usage: attn_bench_gru [--batch N] [--hidden N] [--seq-len N] [--threads N]\n";
      return 2;
    }
  }
  std::cout << bench_gru(batch, hidden, seq_len, threads).dump() << std::endl;
  return 0;
}
