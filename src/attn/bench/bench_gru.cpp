#include "attn/autograd/ops.h"
#include "attn/bench/bench.h"
#include "attn/cpu/threading.h"
#include "attn/nn/rnn.h"
#include "attn/tensor/pool.h"

namespace attn::bench {

// One GRU layer (input = hidden = 512) over batch 64 x 30 steps, all lengths
// full: forward alone (no grad) and forward + backward of sum(output * R).
void bench_gru(const BenchOptions& opt) {
  const int64_t batch = 64, hidden = 512, seq_len = 30;
  set_num_threads(opt.threads);
  Rng rng(1);
  nn::RnnOptions ro;
  ro.input_size = hidden;
  ro.hidden_size = hidden;
  nn::GRU gru(ro, rng);
  Tensor x = randn({batch, seq_len, hidden}, rng).set_requires_grad(true);
  Tensor r = randn({batch, seq_len, hidden}, rng);
  std::vector<int64_t> lengths(batch, seq_len);
  double fwd = median_ms(
      [&] {
        NoGradGuard ng;
        gru.forward(x, lengths);
      },
      opt.repeats);
  double fwdbwd = median_ms(
      [&] {
        gru.zero_grad();
        x.zero_grad();
        backward(gru.forward(x, lengths).output, r);
      },
      opt.repeats);
  emit({{"bench", "gru"}, {"impl", "attn"}, {"batch", batch}, {"hidden", hidden}, {"seq_len", seq_len},
        {"threads", opt.threads}, {"fwd_ms", fwd}, {"fwdbwd_ms", fwdbwd},
        {"pool_peak_bytes", pool::stats().peak_bytes_in_use}});
  if (opt.run_peers)
    run_peer(opt, "torch_gru.py", "--batch " + std::to_string(batch) + " --hidden " + std::to_string(hidden) +
                                      " --seq-len " + std::to_string(seq_len));
}

}  // namespace attn::bench
