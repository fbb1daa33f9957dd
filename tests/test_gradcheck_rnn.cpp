// Finite-difference cases for the fused "gru" and "lstm" ops, run by the
// gradcheck table (test_gradcheck.cpp): both directions, padded batches with
// unsorted lengths and empty sequences, with and without initial state and
// biases. Every element of every input is checked (the tensors are small).
// The case output joins y, h_n (and c_n) so one projection covers all three.
#include "attn/nn/rnn.h"
#include "gradcheck.h"

namespace attn::testing::gradcheck_rnn_test {
namespace {

using T = std::vector<Tensor>;
using D = RnnDirection;
constexpr int64_t kSteps = 4, kIn = 2, kHidden = 3;

Tensor flat(const Tensor& t) { return reshape(t, {t.numel()}); }

// Inputs: x [B, 4, 2], weight_ih [G*3, 2], weight_hh [G*3, 3], then bias_ih,
// bias_hh [G*3] (with_bias), then h0 (and c0) [B, 3] (with_state).
GradcheckCase rnn_case(const char* label, bool is_lstm, D dir, std::vector<int64_t> lengths, bool with_state,
                       bool with_bias) {
  const int64_t B = int64_t(lengths.size()), G = is_lstm ? 4 : 3;
  std::vector<Shape> shapes = {{B, kSteps, kIn}, {G * kHidden, kIn}, {G * kHidden, kHidden}};
  if (with_bias) shapes.insert(shapes.end(), {{G * kHidden}, {G * kHidden}});
  if (with_state) shapes.push_back({B, kHidden});
  if (with_state && is_lstm) shapes.push_back({B, kHidden});
  auto f = [=](const T& x) {
    size_t k = 3;
    RnnWeights w{x[1], x[2], with_bias ? x[k] : Tensor(), with_bias ? x[k + 1] : Tensor()};
    if (with_bias) k += 2;
    Tensor h0 = with_state ? x[k] : Tensor();
    if (is_lstm) {
      LstmResult r = lstm(x[0], lengths, h0, with_state ? x[k + 1] : Tensor(), w, dir);
      return concat({flat(r.output), flat(r.h_n), flat(r.c_n)}, 0);
    }
    GruResult r = gru(x[0], lengths, h0, w, dir);
    return concat({flat(r.output), flat(r.h_n)}, 0);
  };
  GradcheckCase c{is_lstm ? "lstm" : "gru", label, shapes, f};
  c.step = 2e-3f;  // the gates saturate: a small step keeps the difference quotient local
  return c;
}

//                                         label             lstm   direction    lengths    state  bias
ATTN_GRADCHECK_CASE(rnn_case("forward, padded", false, D::Forward, {4, 2, 3}, true, true));
ATTN_GRADCHECK_CASE(rnn_case("reverse, padded", false, D::Reverse, {4, 2, 3}, true, true));
ATTN_GRADCHECK_CASE(rnn_case("reverse, an empty row", false, D::Reverse, {1, 0, 3}, false, true));
ATTN_GRADCHECK_CASE(rnn_case("forward, no bias", false, D::Forward, {3, 4}, true, false));
ATTN_GRADCHECK_CASE(rnn_case("forward, padded", true, D::Forward, {4, 2, 3}, true, true));
ATTN_GRADCHECK_CASE(rnn_case("reverse, padded", true, D::Reverse, {4, 2, 3}, true, true));
ATTN_GRADCHECK_CASE(rnn_case("forward, an empty row", true, D::Forward, {0, 4, 1}, true, true));
ATTN_GRADCHECK_CASE(rnn_case("reverse, no state", true, D::Reverse, {2, 3, 4}, false, true));

}  // namespace
}  // namespace attn::testing::gradcheck_rnn_test
