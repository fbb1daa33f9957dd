// `attn bench conv`: conv2d forward + backward on the CNN encoder's real
// shapes (nn::CnnEncoder's default blocks on a batch of 64x64 RGB images),
// beside the sgemm ceiling: the same GEMMs (shapes, transposes, chunks of
// images, kernels::conv2d_images_per_gemm, operands in memory as conv2d has
// them) timed alone in the same run, call by call in alternation with the
// convolution. The
// ratio conv / GEMMs says what im2col, col2im, the layout copies and the bias
// cost on top of the arithmetic; the target is within 2x.
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/bench/bench.h"
#include "attn/cpu/threading.h"
#include "attn/nn/cnn_encoder.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/random.h"

namespace attn::bench {
namespace {

constexpr int64_t kBatch = 32, kImageSize = 64;

struct ConvLayer {
  int64_t in_ch, out_ch, size;  // size: H = W of the layer's input
  bool input_grad;              // false for the first layer: the images need no gradient
};

// The conv layers of nn::CnnEncoder with its default options on 64x64 images.
std::vector<ConvLayer> encoder_layers() {
  nn::CnnEncoderOptions opt;
  std::vector<ConvLayer> layers;
  int64_t in = opt.in_channels, size = kImageSize;
  for (int64_t out : opt.channels) {
    layers.push_back({in, out, size, !layers.empty()});
    in = out;
    size /= opt.pool;
  }
  return layers;
}

// The GEMMs conv2d's forward and backward run for one layer (per chunk of
// images: Y = W col; dW += dY col^T; dcol = W^T dY when the input needs a
// gradient), with their operands where conv2d keeps them: one chunk's column
// matrix, reused, and the output (gradient) of the whole batch, each chunk its
// own slice of it, so the ceiling moves the same bytes through memory.
std::function<void()> gemm_ceiling(const ConvLayer& l, int64_t kernel, Rng& rng) {
  const int64_t K = l.in_ch * kernel * kernel, P = l.size * l.size;
  const int64_t chunk = kernels::conv2d_images_per_gemm(kBatch, P), N = chunk * P;
  Tensor w = randn({l.out_ch, K}, rng), col = randn({K, N}, rng), dcol = randn({K, N}, rng);
  Tensor dy = randn({kBatch, l.out_ch, P}, rng), out = randn({kBatch, l.out_ch, P}, rng), dw = Tensor::zeros({l.out_ch, K});
  return [=]() mutable {
    for (int64_t b0 = 0; b0 < kBatch; b0 += chunk) {
      const int64_t n = std::min(chunk, kBatch - b0) * P;
      float *y = out.data() + b0 * l.out_ch * P, *g = dy.data() + b0 * l.out_ch * P;
      kernels::gemm(false, false, l.out_ch, n, K, 1.0f, w.data(), K, col.data(), n, 0.0f, y, n);
      kernels::gemm(false, true, l.out_ch, K, n, 1.0f, g, n, col.data(), n, 1.0f, dw.data(), K);
      if (l.input_grad) kernels::gemm(true, false, K, n, l.out_ch, 1.0f, w.data(), K, g, n, 0.0f, dcol.data(), n);
    }
  };
}

std::function<void()> conv_forward_backward(const ConvLayer& l, int64_t kernel, Rng& rng) {
  Tensor x = rand_uniform({kBatch, l.in_ch, l.size, l.size}, rng, 0.0f, 1.0f);
  if (l.input_grad) x.set_requires_grad(true);
  Tensor w = randn({l.out_ch, l.in_ch, kernel, kernel}, rng, 0.1f).set_requires_grad(true);
  Tensor seed = randn({kBatch, l.out_ch, l.size, l.size}, rng);
  return [=]() mutable {
    x.zero_grad();
    w.zero_grad();
    Tensor y = conv2d(x, w, Tensor(), 1, kernel / 2);
    backward(y, seed);
  };
}

// Medians of `a` and `b` timed in alternation (a, b, a, b, ...), so that a
// change of the shared machine's speed lands on both.
std::pair<double, double> interleaved_medians(const std::function<void()>& a, const std::function<void()>& b, int repeats) {
  for (int i = 0; i < 2; ++i) a(), b();  // warm-up
  std::vector<double> ta, tb;
  for (int i = 0; i < repeats; ++i) {
    ta.push_back(median_ms(a, 1, 0));
    tb.push_back(median_ms(b, 1, 0));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

}  // namespace

void bench_conv(const BenchOptions& opt) {
  set_num_threads(opt.threads);
  nlohmann::json machine = machine_record();
  const int64_t kernel = nn::CnnEncoderOptions().kernel;
  Rng rng(1);
  double total_ms = 0, total_gemm_ms = 0, total_flops = 0;
  int index = 0;
  for (const ConvLayer& l : encoder_layers()) {
    const auto [ms, gemm_ms] = interleaved_medians(conv_forward_backward(l, kernel, rng), gemm_ceiling(l, kernel, rng), opt.repeats);
    const double flops = 2.0 * double(l.out_ch) * double(l.in_ch * kernel * kernel) * double(kBatch * l.size * l.size) *
                         (l.input_grad ? 3.0 : 2.0);
    total_ms += ms;
    total_gemm_ms += gemm_ms;
    total_flops += flops;
    nlohmann::json j = {{"bench", "conv2d"}, {"layer", index++}, {"batch", kBatch}, {"in_ch", l.in_ch},
                        {"out_ch", l.out_ch}, {"size", l.size}, {"kernel", kernel}, {"input_grad", l.input_grad},
                        {"images_per_gemm", kernels::conv2d_images_per_gemm(kBatch, l.size * l.size)},
                        {"threads", opt.threads}, {"ms", ms}, {"gemm_ms", gemm_ms}, {"ratio", ms / gemm_ms},
                        {"gflops", flops / (ms * 1e6)}, {"gemm_gflops", flops / (gemm_ms * 1e6)}};
    j.update(machine);
    emit(j);
  }
  nlohmann::json j = {{"bench", "conv2d_encoder"}, {"batch", kBatch}, {"size", kImageSize}, {"threads", opt.threads},
                      {"ms", total_ms}, {"gemm_ms", total_gemm_ms}, {"ratio", total_ms / total_gemm_ms},
                      {"gflops", total_flops / (total_ms * 1e6)}, {"gemm_gflops", total_flops / (total_gemm_ms * 1e6)}};
  j.update(machine);
  emit(j);
}

}  // namespace attn::bench
