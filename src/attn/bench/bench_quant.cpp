// `attn bench quant`: the int8 and bf16 products of a decoder step, on the
// search's own shapes, through attn's packed kernels (nn::StepLinear, as the
// decoders run them: activations converted once, units split across threads)
// and through oneDNN, the library CTranslate2 uses for int8 GEMM on x86, in two
// configurations: its BLAS-like dnnl_gemm_u8s8s32 (CTranslate2's call; the
// weight is re-packed inside every call) and its matmul primitive with the
// weight reordered once into the layout it picks (its best case for weights
// that many products share). Every implementation produces the same fp32 c =
// x W^T: activations quantised per row (our quantize_rows for all), the int32
// sums scaled back by both scales. fp32 through attn's StepLinear is the baseline.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "attn/bench/bench.h"
#include "attn/cpu/isa.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/quant_gemm.h"
#include "attn/nn/step_linear.h"
#include "attn/tensor/random.h"

#ifdef ATTN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace attn::bench {
namespace {

struct Shape {
  const char* what;
  int64_t out, K;
};

// The decoder steps' products (bench_mt.cpp's presets): the output layer of the
// Transformer (E 256) and of luong (its attentional state, 512), the Transformer's
// feed-forward, luong's LSTM gates
constexpr Shape kShapes[] = {{"transformer output layer", 8000, 256},
                             {"transformer feed-forward 1", 1024, 256},
                             {"transformer feed-forward 2", 256, 1024},
                             {"luong output layer", 8000, 512},
                             {"luong lstm gates", 2048, 512}};
constexpr int64_t kRows[] = {5, 64, 320};  // batch 1 beam 5, batch 64 greedy, batch 64 beam 5

// Per-row int8 weights of w [out, K] as oneDNN reads them: q [out, K] s8 and s_w [out]
struct QuantWeight {
  std::vector<int8_t> q;
  std::vector<float> scale;
};

QuantWeight quantize_weight(const Tensor& w) {
  const int64_t out = w.size(0), K = w.size(1);
  QuantWeight r{std::vector<int8_t>(size_t(out * K)), std::vector<float>(size_t(out))};
  for (int64_t o = 0; o < out; ++o) {
    float m = 0;
    for (int64_t k = 0; k < K; ++k) m = std::max(m, std::fabs(w.data()[o * K + k]));
    r.scale[size_t(o)] = m / 127.0f;
    for (int64_t k = 0; k < K; ++k)
      r.q[size_t(o * K + k)] = int8_t(m > 0 ? std::nearbyint(w.data()[o * K + k] / r.scale[size_t(o)]) : 0);
  }
  return r;
}

nlohmann::json line(const char* impl, const char* type, const Shape& s, int64_t m, double ms, const BenchOptions& opt) {
  const double ops = 2.0 * double(m) * double(s.out) * double(s.K);
  return {{"bench", "quant_gemm"}, {"impl", impl}, {"type", type}, {"shape", s.what}, {"m", m}, {"out", s.out},
          {"K", s.K}, {"threads", opt.threads}, {"us", ms * 1e3}, {"gops", ops / (ms * 1e6)}};
}

double time_ms(const std::function<void()>& fn, const BenchOptions& opt) { return median_ms(fn, opt.repeats * 10, 20); }

// attn's StepLinear of `type` over all outputs, x converted once per product
double attn_ms(const Tensor& w, const Tensor& x, nn::StepWeightType type, const BenchOptions& opt) {
  const int64_t m = x.size(0), out = w.size(0), K = w.size(1);
  const nn::StepLinear lin(w, type != nn::StepWeightType::F32 || m >= 16, type);
  nn::StepInput in;
  Tensor c = Tensor::empty({m, out});
  return time_ms([&] { nn::apply_all(lin, in, m, x.data(), K, c.data(), out, false); }, opt);
}

#ifdef ATTN_HAVE_ONEDNN
// activations quantised per row as attn does (u8 = q + 128); c = s_a s_w (sum - 128 sum_k w_q)
double onednn_gemm_ms(const QuantWeight& qw, const Tensor& x, int64_t out, const BenchOptions& opt) {
  const int64_t m = x.size(0), K = x.size(1), ldq = (K + 3) / 4 * 4;
  std::vector<uint8_t> q(size_t(m * ldq));
  std::vector<float> sa(static_cast<size_t>(m));
  std::vector<int32_t> acc(size_t(m * out));
  Tensor c = Tensor::empty({m, out});
  const int32_t no_offset = 0;  // offsetc 'F': one offset for all of C
  return time_ms(
      [&] {
        quant::kernels::quantize_rows(m, K, x.data(), K, q.data(), ldq, sa.data());
        // C = (A - 128) B^T: A u8 [m, K] row-major, B s8 [out, K] read transposed
        dnnl_gemm_u8s8s32('N', 'T', 'F', m, out, K, 1.0f, q.data(), ldq, 128, qw.q.data(), K, 0, 0.0f, acc.data(),
                          out, &no_offset);
#pragma omp parallel for
        for (int64_t i = 0; i < m; ++i)
          for (int64_t o = 0; o < out; ++o)
            c.data()[i * out + o] = float(acc[size_t(i * out + o)]) * sa[size_t(i)] * qw.scale[size_t(o)];
      },
      opt);
}

// the matmul primitive, weights [K, out] reordered once into its own layout; int8:
// s8 activations (q, without the +128), per-output scales inside, per-row ones after
double onednn_matmul_ms(const Tensor& w, const QuantWeight* qw, const Tensor& x, const BenchOptions& opt) {
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const int64_t m = x.size(0), K = x.size(1), out = w.size(0);
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const bool int8 = qw != nullptr;
  const dt src_t = int8 ? dt::s8 : dt::bf16, wei_t = int8 ? dt::s8 : dt::bf16;
  const memory::desc src_md({m, K}, src_t, tag::ab), dst_md({m, out}, dt::f32, tag::ab);
  const memory::desc wei_any({K, out}, wei_t, tag::any), wei_plain({K, out}, wei_t, tag::ba);  // ba: W [out, K] as given
  primitive_attr attr;
  if (int8) attr.set_output_scales(1 << 1, qw->scale);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_any, dst_md), attr, eng);
  memory wei_user(wei_plain, eng), wei(pd.weights_desc(), eng), src(src_md, eng), dst(dst_md, eng);
  std::vector<uint16_t> wb;
  if (int8) {
    std::memcpy(wei_user.get_data_handle(), qw->q.data(), qw->q.size());
  } else {
    wb.resize(size_t(out * K));
    quant::kernels::to_bf16_rows(out, K, w.data(), K, wb.data(), K);
    std::memcpy(wei_user.get_data_handle(), wb.data(), wb.size() * 2);
  }
  reorder(wei_user, wei).execute(st, wei_user, wei);  // once, as a prepared decoder would
  st.wait();
  const dnnl::matmul prim(pd);  // (qualified: attn::matmul is also in scope)
  const int64_t ldq = (K + 3) / 4 * 4;
  std::vector<uint8_t> q(size_t(m * ldq));
  std::vector<float> sa(static_cast<size_t>(m));
  auto* s8 = static_cast<int8_t*>(src.get_data_handle());
  auto* bf = static_cast<uint16_t*>(src.get_data_handle());
  auto* c = static_cast<float*>(dst.get_data_handle());
  return time_ms(
      [&] {
        if (int8) {
          quant::kernels::quantize_rows(m, K, x.data(), K, q.data(), ldq, sa.data());
          for (int64_t i = 0; i < m; ++i)
            for (int64_t k = 0; k < K; ++k) s8[i * K + k] = int8_t(int(q[size_t(i * ldq + k)]) - 128);
        } else {
          quant::kernels::to_bf16_rows(m, K, x.data(), K, bf, K);
        }
        prim.execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
        st.wait();
        if (int8)
#pragma omp parallel for
          for (int64_t i = 0; i < m; ++i)
            for (int64_t o = 0; o < out; ++o) c[i * out + o] *= sa[size_t(i)];
      },
      opt);
}
#endif

}  // namespace

void bench_quant(const BenchOptions& opt) {
  set_num_threads(opt.threads);
  nlohmann::json machine = machine_record();
  machine["features"] = cpu::feature_names();
  emit({{"bench", "quant_gemm_machine"}, {"machine", machine}});
  for (const Shape& s : kShapes) {
    Rng rng(3);
    const Tensor w = randn({s.out, s.K}, rng, 0.05f);
    const QuantWeight qw = quantize_weight(w);
    for (int64_t m : kRows) {
      const Tensor x = randn({m, s.K}, rng);
      std::map<std::string, double> ms;
      ms["attn fp32"] = attn_ms(w, x, nn::StepWeightType::F32, opt);
      ms["attn int8"] = attn_ms(w, x, nn::StepWeightType::I8, opt);
      ms["attn bf16"] = attn_ms(w, x, nn::StepWeightType::BF16, opt);
      emit(line("attn", "fp32", s, m, ms["attn fp32"], opt));
      emit(line("attn", "int8", s, m, ms["attn int8"], opt));
      emit(line("attn", "bf16", s, m, ms["attn bf16"], opt));
#ifdef ATTN_HAVE_ONEDNN
      // oneDNN refuses a configuration it has no implementation of on this CPU (2.6's bf16
      // matmul on AVX2): a line says so and the figure is NaN (null in the ratios)
      auto onednn = [&](const char* impl, const char* type, auto&& time) {
        try {
          const double t = time();
          emit(line(impl, type, s, m, t, opt));
          return t;
        } catch (const dnnl::error& e) {
          emit({{"bench", "quant_gemm"}, {"impl", impl}, {"type", type}, {"shape", s.what}, {"m", m},
                {"error", std::string("oneDNN: ") + e.what()}});
          return std::nan("");
        }
      };
      ms["onednn-gemm int8"] = onednn("onednn-gemm", "int8", [&] { return onednn_gemm_ms(qw, x, s.out, opt); });
      ms["onednn-matmul int8"] = onednn("onednn-matmul", "int8", [&] { return onednn_matmul_ms(w, &qw, x, opt); });
      ms["onednn-matmul bf16"] = onednn("onednn-matmul", "bf16", [&] { return onednn_matmul_ms(w, nullptr, x, opt); });
      emit({{"bench", "quant_gemm_vs_onednn"}, {"shape", s.what}, {"m", m},
            {"int8_attn_over_onednn_best",
             std::fmin(ms["onednn-gemm int8"], ms["onednn-matmul int8"]) / ms["attn int8"]},
            {"bf16_attn_over_onednn", ms["onednn-matmul bf16"] / ms["attn bf16"]},
            {"int8_attn_over_fp32_attn", ms["attn fp32"] / ms["attn int8"]}});
#else
      emit({{"bench", "quant_gemm"}, {"impl", "onednn"}, {"error", "attn was built without oneDNN (libdnnl-dev)"}});
#endif
    }
  }
}

}  // namespace attn::bench
