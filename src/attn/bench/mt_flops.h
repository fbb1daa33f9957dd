// The arithmetic of a Transformer's training step and of its search, counted
// so that `attn bench train|decode --model transformer` can state its speed as
// a fraction of the machine's sgemm rate (issue 26's acceptance).
//
// Legend: E model size, F feed-forward size, V vocabulary, Le / Ld encoder /
// decoder layers; sentence i has source length S_i and target length T_i =
// S_i + 1 (tgt_in: BOS + words; tgt_out: words + EOS); Ns = sum S_i, Nt = sum T_i.
//
// What is counted: every matrix product, 2 m n k FLOPs each, including
// attention's Q K^T and P V (2 L_q L_k E each over all heads); over each
// sentence's own tokens (padding is not useful work); attention over the full
// L_q x L_k square (the causal half is not subtracted: both implementations form
// it). Not counted: embeddings, softmax, layer norms, dropout, activations, the
// loss, Adam (element-wise, O(tokens E) or O(params)).
//
// Training step = 3 x forward (the backward of a product is two products of
// its size: dA = dC B^T, dB = A^T dC). Forward:
//   encoder  Le x [ Ns (8 E^2 + 4 E F) + 4 E sum S_i^2 ]          qkv 6E^2, out 2E^2, FF 4EF
//   decoder  Ld x [ Nt (12 E^2 + 4 E F) + 4 E sum T_i^2           self qkv + out 8E^2, cross q + out 4E^2
//                 + 4 E^2 Ns + 4 E sum T_i S_i ]                   cross keys and values of the memory
//   output   2 Nt E V
// Search (inference, forward only): the encoder once, the cross-attention's keys
// and values once per sentence (Ld 4 E^2 Ns), then per step t = 1 .. n_i of
// sentence i, per each of its k rows (beam k), the one new position:
//   Ld x [ 12 E^2 + 4 E F + 4 E t + 4 E S_i ] + 2 E V               self-attention over t cached positions
//
// The products that run through sgemm (the linear layers and the output layer;
// not attention's scores, which the fused kernels compute) are also listed by
// shape, so that the bench can time them alone through the same BLAS: the rate
// a step made only of its own products would reach (the ceiling of its fraction
// of the sgemm rate). Listed on the shapes the step computes: the Transformer
// runs its layers on the real positions alone (autograd/ops_sequence.h), so
// over each side's token count.
#pragma once
#include <cstdint>
#include <vector>

namespace attn::bench {

struct TransformerDims {
  double E = 0, F = 0, V = 0, enc_layers = 0, dec_layers = 0;
};

// Forward FLOPs of the encoder over sources of `src_len` tokens each.
inline double encoder_flops(const TransformerDims& d, const std::vector<int64_t>& src_len) {
  double tokens = 0, squares = 0;
  for (int64_t s : src_len) tokens += double(s), squares += double(s) * double(s);
  return d.enc_layers * (tokens * (8 * d.E * d.E + 4 * d.E * d.F) + 4 * d.E * squares);
}

// FLOPs of one training step (forward + backward) on sentences of source
// lengths `src_len` and target lengths src_len + 1 (bench_mt.cpp's batch).
inline double transformer_train_flops(const TransformerDims& d, const std::vector<int64_t>& src_len) {
  double ns = 0, nt = 0, squares = 0, cross = 0;
  for (int64_t s : src_len) {
    const double t = double(s + 1);
    ns += double(s), nt += t, squares += t * t, cross += t * double(s);
  }
  const double decoder =
      d.dec_layers * (nt * (12 * d.E * d.E + 4 * d.E * d.F) + 4 * d.E * squares + 4 * d.E * d.E * ns + 4 * d.E * cross);
  return 3 * (encoder_flops(d, src_len) + decoder + 2 * nt * d.E * d.V);
}

// FLOPs of a search: sentence i of source length src_len[i] ran steps[i] steps
// on `rows` rows each (the beam size; 1 for greedy).
inline double transformer_search_flops(const TransformerDims& d, const std::vector<int64_t>& src_len,
                                       const std::vector<int64_t>& steps, int64_t rows) {
  double total = encoder_flops(d, src_len);
  for (size_t i = 0; i < src_len.size(); ++i) {
    const double n = double(steps[i]), s = double(src_len[i]);
    const double per_row_fixed = d.dec_layers * (12 * d.E * d.E + 4 * d.E * d.F + 4 * d.E * s) + 2 * d.E * d.V;
    const double sum_t = n * (n + 1) / 2;  // self-attention over t = 1 .. n cached positions
    total += d.dec_layers * 4 * d.E * d.E * s + double(rows) * (n * per_row_fixed + d.dec_layers * 4 * d.E * sum_t);
  }
  return total;
}

// One matrix product C [m, n] = A [m, k] B [k, n], `count` times
struct Product {
  int64_t m = 0, n = 0, k = 0, count = 1;
};

// The forward products of one decoder position over `rows` rows (a search step),
// or of a layer stack over `src_rows` / `tgt_rows` token rows (training's forward).
inline std::vector<Product> transformer_products(const TransformerDims& d, int64_t src_rows, int64_t tgt_rows,
                                                 bool with_encoder) {
  const int64_t E = int64_t(d.E), F = int64_t(d.F), V = int64_t(d.V);
  const int64_t Le = int64_t(d.enc_layers), Ld = int64_t(d.dec_layers);
  std::vector<Product> p;
  if (with_encoder)  // qkv, out, FF up, FF down
    p.insert(p.end(), {{src_rows, 3 * E, E, Le}, {src_rows, E, E, Le}, {src_rows, F, E, Le}, {src_rows, E, F, Le}});
  // self qkv, self out, cross q, cross out, FF up, FF down; the cross keys and values of the memory
  p.insert(p.end(), {{tgt_rows, 3 * E, E, Ld}, {tgt_rows, E, E, 3 * Ld}, {tgt_rows, F, E, Ld}, {tgt_rows, E, F, Ld}});
  if (with_encoder) p.push_back({src_rows, 2 * E, E, Ld});
  p.push_back({tgt_rows, V, E, 1});  // the output layer
  return p;
}

// A training step's products over Ns source and Nt target tokens (the real
// positions the layers compute): each forward product and its two backward
// ones (dA = dC B^T: [m, n] x [n, k]; dB = A^T dC: [k, m] x [m, n]).
inline std::vector<Product> transformer_train_products(const TransformerDims& d, int64_t Ns, int64_t Nt) {
  std::vector<Product> out;
  for (const Product& f : transformer_products(d, Ns, Nt, true))
    out.insert(out.end(), {f, {f.m, f.k, f.n, f.count}, {f.k, f.n, f.m, f.count}});
  return out;
}

// One search step's products over `rows` decoder rows (batch x beam): the
// decoder's, the cross keys and values being computed once per sentence
inline std::vector<Product> transformer_step_products(const TransformerDims& d, int64_t rows) {
  return transformer_products(d, 0, rows, false);
}

}  // namespace attn::bench

