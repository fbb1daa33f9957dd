#include "attn/bench/mt_rates.h"

#include <sys/resource.h>

#include "attn/models/transformer/transformer_config.h"

namespace attn::bench {

std::optional<TransformerDims> transformer_dims(const models::ModelConfig& c) {
  if (c.type != "transformer") return std::nullopt;
  const auto& t = c.section<models::TransformerConfig>();
  return TransformerDims{double(c.embed), double(t.feed_forward), double(c.tgt_vocab), double(t.encoder_layers),
                         double(t.decoder_layers)};
}

double sgemm_line(int64_t m, int64_t n, int64_t k, const std::string& what, const BenchOptions& opt) {
  const double gflops = sgemm_gflops(m, n, k, opt.repeats, 0.5);
  emit({{"bench", "sgemm"}, {"impl", "attn"}, {"m", m}, {"n", n}, {"k", k}, {"threads", opt.threads},
        {"for", what}, {"gflops", gflops}});
  return gflops;
}

double sgemm_products_line(const std::vector<Product>& products, const std::string& what, const BenchOptions& opt) {
  double flops = 0, seconds = 0;
  for (const Product& p : products) {
    const double f = 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.count);
    flops += f;
    seconds += f / (sgemm_gflops(p.m, p.n, p.k, opt.repeats, 0.05) * 1e9);  // warm by now: the figure ran first
  }
  const double gflops = flops / seconds / 1e9;
  emit({{"bench", "sgemm_products"}, {"impl", "attn"}, {"threads", opt.threads}, {"for", what},
        {"products", products.size()}, {"gflops", gflops}});
  return gflops;
}

void emit_rates(const nlohmann::json& attn_line, const std::vector<nlohmann::json>& peer_lines,
                const std::string& per_s, const SgemmRates& sgemm) {
  const double gflops = attn_line.at("gflops");
  nlohmann::json j = {{"bench", attn_line.value("bench", "") + "_rates"}, {"model", attn_line.at("model")},
                      {"batch", attn_line.at("batch")}};
  if (attn_line.contains("beam")) j["beam"] = attn_line["beam"];
  if (attn_line.contains("compute")) j["compute"] = attn_line["compute"];
  for (const nlohmann::json& p : peer_lines) {
    if (!p.contains(per_s) || p.value("bench", "") != attn_line.value("bench", "")) continue;
    if (p.value("compute", "fp32") != "fp32") continue;  // PyTorch's own int8: decode_compute lines
    j["speedup"] = double(attn_line.at(per_s)) / double(p[per_s]);
    // searches that ran different numbers of rows x steps (bench_mt.cpp: attn stops each
    // sentence at its own length limit, the peer at the batch's): rows x steps per second
    if (attn_line.contains("row_steps") && p.contains("row_steps"))
      j["speedup_per_row_step"] = double(attn_line["row_steps"]) / double(attn_line.at("ms")) /
                                  (double(p["row_steps"]) / double(p.at("ms")));
  }
  j.update({{"gflops", gflops}, {"sgemm_2048_gflops", sgemm.square}, {"fraction_of_sgemm_2048", gflops / sgemm.square},
            {"sgemm_shape_gflops", sgemm.shape}, {"fraction_of_sgemm_shape", gflops / sgemm.shape},
            {"sgemm_products_gflops", sgemm.products}, {"fraction_of_sgemm_products", gflops / sgemm.products}});
  emit(j);
}

size_t rss_peak_bytes() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return size_t(u.ru_maxrss) * 1024;  // KiB on Linux
}

}  // namespace attn::bench
