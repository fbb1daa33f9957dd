// nn::GRU / nn::LSTM against torch.nn.GRU / torch.nn.LSTM (tests/oracle/rnn.py),
// padding invariance, zero-length sequences, the cells against the stacked
// modules, and argument validation.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>

#include "attn/autograd/ops.h"
#include "attn/nn/rnn.h"
#include "oracle.h"

using namespace attn;
using attn::testing::compare;
using attn::testing::nan_max;
using attn::testing::nan_min;
using attn::testing::run_oracle;

namespace {

// The reference is float64 torch on our float32 inputs; we compute in float32
// and must agree within 1e-4 relative as EXPECT_CLOSE measures it (oracle.h).
constexpr double kTol = 1e-4;

#define EXPECT_CLOSE_SCALED(a, b, what) EXPECT_CLOSE((a), (b), kTol, (what))

// ---------------------------------------------------------------- torch parity

struct ParityCase {
  const char* name;
  const char* cell;  // "gru" | "lstm"
  int layers;
  bool bidirectional;
  int batch, seq_len, input, hidden;
  bool with_h0;
  int seed;  // odd: the longest sequence is seq_len - 1 (see rnn.py)
};

void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.name; }

class RnnParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(RnnParity, MatchesTorch) {
  const ParityCase& c = GetParam();
  const bool is_lstm = std::string(c.cell) == "lstm";
  char args[256];
  std::snprintf(args, sizeof args, "%s %d %d %d %d %d %d %d %d", c.cell, c.layers, int(c.bidirectional), c.batch,
                c.seq_len, c.input, c.hidden, int(c.with_h0), c.seed);
  SafetensorsFile f = run_oracle("rnn.py", args);

  nn::RnnOptions opt;
  opt.input_size = c.input;
  opt.hidden_size = c.hidden;
  opt.num_layers = c.layers;
  opt.bidirectional = c.bidirectional;
  Rng rng(7);
  std::unique_ptr<nn::RnnStack> mod;
  if (is_lstm)
    mod = std::make_unique<nn::LSTM>(opt, rng);
  else
    mod = std::make_unique<nn::GRU>(opt, rng);
  // every torch parameter exists here under the same name and shape, and vice versa
  auto params = mod->named_parameters();
  int torch_params = 0;
  for (auto& [name, t] : f.tensors)
    if (name.rfind("weight_", 0) == 0 || name.rfind("bias_", 0) == 0) ++torch_params;
  ASSERT_EQ(int(params.size()), torch_params);
  for (auto& [name, p] : params) {
    ASSERT_TRUE(f.has(name)) << name;
    ASSERT_EQ(p.shape(), f.get(name).shape()) << name;
    p.copy_from(f.get(name));
  }

  Tensor x = f.get("x").clone().set_requires_grad();
  Tensor h0 = c.with_h0 ? f.get("h0").clone().set_requires_grad() : Tensor();
  Tensor c0 = c.with_h0 && is_lstm ? f.get("c0").clone().set_requires_grad() : Tensor();
  Tensor out, h_n, c_n;
  if (is_lstm) {
    LstmResult r = static_cast<nn::LSTM&>(*mod).forward(x, f.get("lengths"), h0, c0);
    out = r.output, h_n = r.h_n, c_n = r.c_n;
  } else {
    GruResult r = static_cast<nn::GRU&>(*mod).forward(x, f.get("lengths"), h0);
    out = r.output, h_n = r.h_n;
  }
  Tensor loss = add(sum_all(mul(out, f.get("wy"))), sum_all(mul(h_n, f.get("wh"))));
  if (is_lstm) loss = add(loss, sum_all(mul(c_n, f.get("wc"))));
  backward(loss);

  EXPECT_CLOSE_SCALED(out, f.get("out"), "output");
  EXPECT_CLOSE_SCALED(h_n, f.get("h_n"), "h_n");
  if (is_lstm) EXPECT_CLOSE_SCALED(c_n, f.get("c_n"), "c_n");
  ASSERT_TRUE(x.grad().defined());
  EXPECT_CLOSE_SCALED(x.grad(), f.get("grad.x"), "grad x");
  if (c.with_h0) {
    ASSERT_TRUE(h0.grad().defined());
    EXPECT_CLOSE_SCALED(h0.grad(), f.get("grad.h0"), "grad h0");
    if (is_lstm) {
      ASSERT_TRUE(c0.grad().defined());
      EXPECT_CLOSE_SCALED(c0.grad(), f.get("grad.c0"), "grad c0");
    }
  }
  for (auto& [name, p] : params) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_CLOSE_SCALED(p.grad(), f.get("grad." + name), "grad " + name);
  }
}

std::string parity_name(const ::testing::TestParamInfo<ParityCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(
    Torch, RnnParity,
    ::testing::Values(
        //         name                       cell    L  bidir  B  T  in  H   h0     seed
        ParityCase{"Gru1LayerUni", "gru", 1, false, 5, 7, 6, 8, false, 2},
        ParityCase{"Gru1LayerBiH0", "gru", 1, true, 5, 7, 6, 8, true, 3},
        ParityCase{"Gru2LayerUniH0", "gru", 2, false, 6, 6, 5, 7, true, 4},
        ParityCase{"Gru2LayerBi", "gru", 2, true, 6, 8, 5, 9, false, 5},
        ParityCase{"Gru2LayerBiH0Wide", "gru", 2, true, 16, 5, 24, 256, true, 6},
        ParityCase{"Lstm1LayerUni", "lstm", 1, false, 5, 7, 6, 8, false, 2},
        ParityCase{"Lstm1LayerBiH0", "lstm", 1, true, 5, 7, 6, 8, true, 3},
        ParityCase{"Lstm2LayerUniH0", "lstm", 2, false, 6, 6, 5, 7, true, 4},
        ParityCase{"Lstm2LayerBi", "lstm", 2, true, 6, 8, 5, 9, false, 5},
        ParityCase{"Lstm2LayerBiH0Wide", "lstm", 2, true, 16, 5, 24, 256, true, 7}),
    parity_name);

// ---------------------------------------------------------------- padding

// max |a - b|, NaN when either side has a NaN (compare.h)
double max_abs_diff(const float* a, const float* b, int64_t n) { return compare(a, b, n).max_abs; }

// Garbage at padded positions, and more padding appended, change nothing at the
// valid positions: outputs, h_n, c_n and every gradient are bit-identical
// (the packed computation never reads a padded position), and the padded
// outputs and input gradients are exactly zero.
template <class Module>
void check_padding_invariance(bool is_lstm) {
  const int64_t B = 4, T = 6, extra = 3, I = 5, H = 6;
  const std::vector<int64_t> lengths = {6, 3, 1, 4};
  nn::RnnOptions opt;
  opt.input_size = I;
  opt.hidden_size = H;
  opt.num_layers = 2;
  opt.bidirectional = true;
  Rng rng(11);
  Module mod(opt, rng);
  Tensor x = randn({B, T, I}, rng);
  Tensor wy = randn({B, T + extra, 2 * H}, rng);
  Tensor wh = randn({4, B, H}, rng);

  struct Run {
    Tensor out, h_n, c_n, dx;
    std::vector<Tensor> dw;
  };
  auto run = [&](const Tensor& xin) {
    mod.zero_grad();
    Tensor xl = xin.clone().set_requires_grad();
    Run r;
    if constexpr (std::is_same_v<Module, nn::LSTM>) {
      LstmResult o = mod.forward(xl, lengths);
      r.out = o.output, r.h_n = o.h_n, r.c_n = o.c_n;
    } else {
      GruResult o = mod.forward(xl, lengths);
      r.out = o.output, r.h_n = o.h_n;
    }
    Tensor w = slice(wy, 1, 0, xin.size(1));
    Tensor loss = add(sum_all(mul(r.out, w)), sum_all(mul(r.h_n, wh)));
    if (is_lstm) loss = add(loss, sum_all(mul(r.c_n, wh)));
    backward(loss);
    r.dx = xl.grad();
    for (auto& p : mod.parameters()) r.dw.push_back(p.grad().clone());
    return r;
  };
  Run clean = run(x);

  Tensor dirty = Tensor::empty({B, T + extra, I});
  Rng garbage(99);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T + extra; ++t)
      for (int64_t i = 0; i < I; ++i)
        dirty.data()[(b * (T + extra) + t) * I + i] =
            t < lengths[b] ? x.data()[(b * T + t) * I + i] : 1e3f * garbage.normal();
  Run padded = run(dirty);

  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T + extra; ++t) {
      const float* po = padded.out.data() + (b * (T + extra) + t) * 2 * H;
      const float* pd = padded.dx.data() + (b * (T + extra) + t) * I;
      if (t < lengths[b]) {
        EXPECT_EQ(max_abs_diff(po, clean.out.data() + (b * T + t) * 2 * H, 2 * H), 0.0f) << "out b" << b << " t" << t;
        EXPECT_EQ(max_abs_diff(pd, clean.dx.data() + (b * T + t) * I, I), 0.0f) << "dx b" << b << " t" << t;
      } else {
        for (int64_t k = 0; k < 2 * H; ++k) EXPECT_EQ(po[k], 0.0f) << "padded out b" << b << " t" << t;
        for (int64_t k = 0; k < I; ++k) EXPECT_EQ(pd[k], 0.0f) << "padded dx b" << b << " t" << t;
      }
    }
  EXPECT_EQ(max_abs_diff(padded.h_n.data(), clean.h_n.data(), clean.h_n.numel()), 0.0f);
  if (is_lstm) EXPECT_EQ(max_abs_diff(padded.c_n.data(), clean.c_n.data(), clean.c_n.numel()), 0.0f);
  ASSERT_EQ(padded.dw.size(), clean.dw.size());
  for (size_t i = 0; i < clean.dw.size(); ++i)
    EXPECT_EQ(max_abs_diff(padded.dw[i].data(), clean.dw[i].data(), clean.dw[i].numel()), 0.0f) << "weight " << i;
}

TEST(RnnPadding, GruGarbagePaddingChangesNothing) { check_padding_invariance<nn::GRU>(false); }
TEST(RnnPadding, LstmGarbagePaddingChangesNothing) { check_padding_invariance<nn::LSTM>(true); }

// A sequence of length 0 takes no step: its h_n (c_n) is h0 (c0), its outputs
// are zero, d(h0) = d(h_n) and it contributes nothing to the weight gradients.
TEST(RnnPadding, ZeroLengthSequenceKeepsInitialState) {
  const int64_t B = 3, T = 4, I = 3, H = 5;
  Rng rng(5);
  for (bool is_lstm : {false, true}) {
    const int64_t G = is_lstm ? 4 : 3;
    RnnWeights w{randn({G * H, I}, rng).set_requires_grad(), randn({G * H, H}, rng).set_requires_grad(),
                 randn({G * H}, rng).set_requires_grad(), randn({G * H}, rng).set_requires_grad()};
    for (RnnDirection dir : {RnnDirection::Forward, RnnDirection::Reverse}) {
      Tensor x = randn({B, T, I}, rng).set_requires_grad();
      Tensor h0 = randn({B, H}, rng).set_requires_grad(), c0 = randn({B, H}, rng).set_requires_grad();
      Tensor gh = randn({B, H}, rng);
      std::vector<int64_t> lengths = {2, 0, 4};
      Tensor out, h_n, c_n;
      if (is_lstm) {
        LstmResult r = lstm(x, lengths, h0, c0, w, dir);
        out = r.output, h_n = r.h_n, c_n = r.c_n;
      } else {
        GruResult r = gru(x, lengths, h0, w, dir);
        out = r.output, h_n = r.h_n;
      }
      Tensor loss = sum_all(mul(h_n, gh));
      if (is_lstm) loss = add(loss, sum_all(mul(c_n, gh)));
      loss = add(loss, sum_all(out));
      backward(loss);
      for (int64_t k = 0; k < H; ++k) {
        EXPECT_EQ(h_n.data()[1 * H + k], h0.data()[1 * H + k]);
        EXPECT_EQ(h0.grad().data()[1 * H + k], gh.data()[1 * H + k]);
        if (is_lstm) {
          EXPECT_EQ(c_n.data()[1 * H + k], c0.data()[1 * H + k]);
          EXPECT_EQ(c0.grad().data()[1 * H + k], gh.data()[1 * H + k]);
        }
      }
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < H; ++k) EXPECT_EQ(out.data()[(1 * T + t) * H + k], 0.0f);
      for (int64_t i = 0; i < T * I; ++i) EXPECT_EQ(x.grad().data()[1 * T * I + i], 0.0f);
      for (Tensor* p : {&w.weight_ih, &w.weight_hh, &w.bias_ih, &w.bias_hh}) p->zero_grad();
    }
  }
}

// All sequences empty: no step at all, still well defined.
TEST(RnnPadding, AllEmptyBatch) {
  const int64_t B = 2, T = 3, I = 2, H = 3;
  Rng rng(6);
  RnnWeights w{randn({3 * H, I}, rng).set_requires_grad(), randn({3 * H, H}, rng).set_requires_grad(),
               randn({3 * H}, rng).set_requires_grad(), randn({3 * H}, rng).set_requires_grad()};
  Tensor x = randn({B, T, I}, rng).set_requires_grad();
  GruResult r = gru(x, std::vector<int64_t>{0, 0}, Tensor(), w);
  for (float v : r.output.to_vector()) EXPECT_EQ(v, 0.0f);
  for (float v : r.h_n.to_vector()) EXPECT_EQ(v, 0.0f);
  backward(add(sum_all(r.output), sum_all(r.h_n)));
  for (float v : w.weight_hh.grad().to_vector()) EXPECT_EQ(v, 0.0f);
  for (float v : x.grad().to_vector()) EXPECT_EQ(v, 0.0f);
}

// ---------------------------------------------------------------- cells

// A decoder loop of GRUCell steps equals one nn::GRU layer over the sequence
// (forward values and gradients): the cell is the same op with seq_len 1
// (which multiplies by W_hh through BLAS, the layer through the packed
// weight). Small: one thread; wide: the recurrence team splits hidden units.
// Two float32 computations summing in different orders: compared as the torch
// parity is (EXPECT_CLOSE_SCALED, 1e-4).
struct CellSize {
  int64_t batch, seq_len, input, hidden;
};
class RnnCell : public ::testing::TestWithParam<CellSize> {};

TEST_P(RnnCell, GruCellUnrolledEqualsGruLayer) {
  const auto [B, T, I, H] = GetParam();
  Rng rng(21);
  nn::GRUCell cell(I, H, rng);
  nn::RnnOptions opt;
  opt.input_size = I;
  opt.hidden_size = H;
  nn::GRU layer(opt, rng);
  EXPECT_EQ(cell.named_parameters().size(), 4u);
  for (const char* n : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
    layer.parameter(std::string(n) + "_l0").copy_from(cell.parameter(n));
  Tensor x = randn({B, T, I}, rng).set_requires_grad(), wy = randn({B, T, H}, rng);
  Tensor h0 = randn({B, H}, rng).set_requires_grad();

  GruResult full = layer.forward(x, std::vector<int64_t>(B, T), reshape(h0, {1, B, H}));
  backward(sum_all(mul(full.output, wy)));
  Tensor dx_full = x.grad().clone(), dh0_full = h0.grad().clone();
  x.zero_grad();
  h0.zero_grad();

  Tensor h = h0, loss;
  std::vector<Tensor> hs;
  for (int64_t t = 0; t < T; ++t) {
    h = cell.forward(reshape(slice(x, 1, t, 1), {B, I}), h);
    Tensor term = sum_all(mul(h, reshape(slice(wy, 1, t, 1), {B, H})));
    loss = loss.defined() ? add(loss, term) : term;
    hs.push_back(reshape(h, {B, 1, H}));
  }
  backward(loss);
  EXPECT_CLOSE_SCALED(concat(hs, 1), full.output, "outputs");
  EXPECT_CLOSE_SCALED(x.grad(), dx_full, "dx");
  EXPECT_CLOSE_SCALED(h0.grad(), dh0_full, "dh0");
  for (const char* n : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
    EXPECT_CLOSE_SCALED(cell.parameter(n).grad(), layer.parameter(std::string(n) + "_l0").grad(), n);
}

TEST_P(RnnCell, LstmCellUnrolledEqualsLstmLayer) {
  const auto [B, T, I, H] = GetParam();
  Rng rng(22);
  nn::LSTMCell cell(I, H, rng);
  nn::RnnOptions opt;
  opt.input_size = I;
  opt.hidden_size = H;
  nn::LSTM layer(opt, rng);
  for (const char* n : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
    layer.parameter(std::string(n) + "_l0").copy_from(cell.parameter(n));
  Tensor x = randn({B, T, I}, rng).set_requires_grad(), wy = randn({B, T, H}, rng), wc = randn({B, H}, rng);
  Tensor h0 = randn({B, H}, rng).set_requires_grad(), c0 = randn({B, H}, rng).set_requires_grad();

  LstmResult full = layer.forward(x, std::vector<int64_t>(B, T), reshape(h0, {1, B, H}), reshape(c0, {1, B, H}));
  backward(add(sum_all(mul(full.output, wy)), sum_all(mul(reshape(full.c_n, {B, H}), wc))));
  Tensor dx_full = x.grad().clone(), dh0_full = h0.grad().clone(), dc0_full = c0.grad().clone();
  x.zero_grad();
  h0.zero_grad();
  c0.zero_grad();

  nn::LstmState s{h0, c0};
  Tensor loss;
  for (int64_t t = 0; t < T; ++t) {
    s = cell.forward(reshape(slice(x, 1, t, 1), {B, I}), s);
    Tensor term = sum_all(mul(s.h, reshape(slice(wy, 1, t, 1), {B, H})));
    loss = loss.defined() ? add(loss, term) : term;
  }
  loss = add(loss, sum_all(mul(s.c, wc)));
  backward(loss);
  EXPECT_CLOSE_SCALED(s.c, reshape(full.c_n, {B, H}), "c_n");
  EXPECT_CLOSE_SCALED(x.grad(), dx_full, "dx");
  EXPECT_CLOSE_SCALED(h0.grad(), dh0_full, "dh0");
  EXPECT_CLOSE_SCALED(c0.grad(), dc0_full, "dc0");
  for (const char* n : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"})
    EXPECT_CLOSE_SCALED(cell.parameter(n).grad(), layer.parameter(std::string(n) + "_l0").grad(), n);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RnnCell, ::testing::Values(CellSize{3, 5, 4, 6}, CellSize{40, 4, 24, 100}),
                         [](const ::testing::TestParamInfo<CellSize>& i) { return i.index ? "Wide" : "Small"; });

// ---------------------------------------------------------------- module details

TEST(RnnModule, TorchParameterNamesAndInit) {
  nn::RnnOptions opt;
  opt.input_size = 3;
  opt.hidden_size = 4;
  opt.num_layers = 2;
  opt.bidirectional = true;
  Rng rng(1);
  nn::LSTM m(opt, rng);
  std::vector<std::string> expect;
  for (std::string l : {"_l0", "_l0_reverse", "_l1", "_l1_reverse"})
    for (std::string p : {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}) expect.push_back(p + l);
  auto params = m.named_parameters();
  ASSERT_EQ(params.size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) EXPECT_EQ(params[i].first, expect[i]);
  EXPECT_EQ(m.parameter("weight_ih_l0").shape(), (Shape{16, 3}));
  EXPECT_EQ(m.parameter("weight_ih_l1_reverse").shape(), (Shape{16, 8}));
  EXPECT_EQ(m.parameter("weight_hh_l1").shape(), (Shape{16, 4}));
  // U(-1/sqrt(H), 1/sqrt(H)) = U(-0.5, 0.5), spread over the range
  double lo = 1, hi = -1;
  for (auto& [n, p] : params)
    for (float v : p.to_vector()) lo = nan_min(lo, v), hi = nan_max(hi, v);
  EXPECT_GE(lo, -0.5f);
  EXPECT_LE(hi, 0.5f);
  EXPECT_LT(lo, -0.4f);
  EXPECT_GT(hi, 0.4f);
}

// Dropout between layers acts in training mode only, and never on the last layer.
TEST(RnnModule, DropoutBetweenLayersOnlyWhenTraining) {
  nn::RnnOptions opt;
  opt.input_size = 3;
  opt.hidden_size = 8;
  opt.num_layers = 2;
  opt.dropout = 0.5f;
  Rng rng(3);
  nn::GRU m(opt, rng);
  Tensor x = randn({2, 4, 3}, rng);
  std::vector<int64_t> len = {4, 4};
  m.train(false);
  Tensor a = m.forward(x, len).output, b = m.forward(x, len).output;
  EXPECT_EQ(max_abs_diff(a.data(), b.data(), a.numel()), 0.0f);
  m.train(true);
  Tensor c = m.forward(x, len).output;
  EXPECT_GT(max_abs_diff(a.data(), c.data(), a.numel()), 1e-4f);
  opt.num_layers = 1;  // a single layer has no dropout at all
  nn::GRU one(opt, rng);
  Tensor d = one.forward(x, len).output, e = one.forward(x, len).output;
  EXPECT_EQ(max_abs_diff(d.data(), e.data(), d.numel()), 0.0f);
}

TEST(RnnModule, ValidatesShapes) {
  Rng rng(1);
  nn::RnnOptions opt;
  opt.input_size = 3;
  opt.hidden_size = 4;
  nn::GRU m(opt, rng);
  EXPECT_THROW(m.forward(randn({2, 5, 4}, rng), std::vector<int64_t>{5, 5}), std::invalid_argument);  // in 4 != 3
  EXPECT_THROW(m.forward(randn({2, 5, 3}, rng), std::vector<int64_t>{5}), std::invalid_argument);     // 1 length
  EXPECT_THROW(m.forward(randn({2, 5, 3}, rng), std::vector<int64_t>{6, 5}), std::invalid_argument);  // > seq_len
  EXPECT_THROW(m.forward(randn({2, 5, 3}, rng), std::vector<int64_t>{-1, 5}), std::invalid_argument);
  EXPECT_THROW(m.forward(randn({2, 5, 3}, rng), std::vector<int64_t>{5, 5}, randn({1, 3, 4}, rng)),
               std::invalid_argument);  // h0 batch 3 != 2
  EXPECT_THROW(m.forward(randn({2, 5, 3}, rng), Tensor::from({2.5f, 1}, {2})), std::invalid_argument);
  EXPECT_THROW(nn::GRU(nn::RnnOptions{}, rng), std::invalid_argument);  // sizes 0
  RnnWeights w{randn({12, 3}, rng), randn({12, 4}, rng), Tensor(), Tensor()};
  EXPECT_THROW(lstm(randn({2, 5, 3}, rng), std::vector<int64_t>{5, 5}, Tensor(), Tensor(), w),
               std::invalid_argument);                                                            // 3H rows for 4H
  EXPECT_NO_THROW(gru(randn({2, 5, 3}, rng), std::vector<int64_t>{5, 5}, Tensor(), w));  // biases are optional
}

}  // namespace
