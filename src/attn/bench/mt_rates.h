// What `attn bench train|decode` adds for a model whose arithmetic it counts
// (mt_flops.h; the Transformer): the machine's sgemm rate measured in the same
// run, and one line per figure that puts attn beside the peer and beside that
// rate (issue 26's acceptance: a speed-up over PyTorch and a fraction of sgemm).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/bench/bench.h"
#include "attn/bench/mt_flops.h"
#include "attn/models/config.h"

namespace attn::bench {

// The dimensions mt_flops.h counts with, for a transformer config; nullopt for other kinds.
std::optional<TransformerDims> transformer_dims(const models::ModelConfig& c);

// sgemm GFLOP/s through attn's BLAS at [m, k] x [k, n], measured now (about
// 0.5 s of warm-up), printed as {"bench": "sgemm", "m", "n", "k", "for", "gflops"}
// (`what`: the figure it is measured for) and returned.
double sgemm_line(int64_t m, int64_t n, int64_t k, const std::string& what, const BenchOptions& opt);

// sgemm GFLOP/s over a list of products, each shape timed alone through attn's
// BLAS (the same warm-up), weighted by its FLOPs and count: the rate a step
// made only of these products would reach. Printed as {"bench": "sgemm_products",
// "for", "products" (the distinct shapes), "gflops"} and returned.
double sgemm_products_line(const std::vector<Product>& products, const std::string& what, const BenchOptions& opt);

// The sgemm rates a figure is held to: square (n = 2048), at the figure's
// largest product (the output layer: tokens or rows x E -> V), and over all of
// the step's own products (sgemm_products_line).
struct SgemmRates {
  double square = 0;
  double shape = 0;
  double products = 0;
};

// {"bench": "<attn_line's bench>_rates", model, batch, (beam), "speedup": attn's
// `per_s` field / the peer's (absent when the peer printed none), for searches
// "speedup_per_row_step" (decoder rows x steps per second, attn's / the peer's), "gflops",
// "sgemm_2048_gflops", "fraction_of_sgemm_2048", "sgemm_shape_gflops",
// "fraction_of_sgemm_shape", "sgemm_products_gflops", "fraction_of_sgemm_products"}; printed.
void emit_rates(const nlohmann::json& attn_line, const std::vector<nlohmann::json>& peer_lines,
                const std::string& per_s, const SgemmRates& sgemm);

// The process's peak resident set so far (getrusage's ru_maxrss), in bytes.
size_t rss_peak_bytes();

}  // namespace attn::bench
