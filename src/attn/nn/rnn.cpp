// Recurrent modules on the fused ops of rnn_ops.cpp: GRUCell / LSTMCell (one
// step) and the stacked, optionally bidirectional GRU / LSTM (rnn.h).
#include "attn/nn/rnn.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace attn::nn {
namespace {

// PyTorch's RNN init: every weight and bias U(-1/sqrt(H), 1/sqrt(H)).
Tensor uniform_init(const Shape& shape, int64_t hidden, Rng& rng) {
  float bound = 1.0f / std::sqrt(float(hidden));
  return rand_uniform(shape, rng, -bound, bound);
}

void check_sizes(const char* who, int64_t input_size, int64_t hidden_size) {
  if (input_size <= 0 || hidden_size <= 0)
    throw std::invalid_argument(std::string(who) + ": input_size " + std::to_string(input_size) + " and hidden_size " +
                                std::to_string(hidden_size) + " must be > 0");
}

void check_cell_input(const char* who, const Tensor& x, int64_t input_size) {
  if (!x.defined() || x.dim() != 2 || x.size(1) != input_size)
    throw std::invalid_argument(std::string(who) + ": x must be [batch, " + std::to_string(input_size) + "], got " +
                                shape_str(x));
}

}  // namespace

GRUCell::GRUCell(int64_t in, int64_t hidden, Rng& rng) : input_size(in), hidden_size(hidden) {
  check_sizes("GRUCell", in, hidden);
  weight_ih = register_parameter("weight_ih", uniform_init({3 * hidden, in}, hidden, rng));
  weight_hh = register_parameter("weight_hh", uniform_init({3 * hidden, hidden}, hidden, rng));
  bias_ih = register_parameter("bias_ih", uniform_init({3 * hidden}, hidden, rng));
  bias_hh = register_parameter("bias_hh", uniform_init({3 * hidden}, hidden, rng));
}

Tensor GRUCell::forward(const Tensor& x, const Tensor& h) const {
  check_cell_input("GRUCell", x, input_size);
  const int64_t batch = x.size(0);
  // a sequence of one step each: [batch, 1, in]
  return gru(reshape(x, Shape{batch, 1, input_size}), std::vector<int64_t>(batch, 1), h, weights()).h_n;
}

LSTMCell::LSTMCell(int64_t in, int64_t hidden, Rng& rng) : input_size(in), hidden_size(hidden) {
  check_sizes("LSTMCell", in, hidden);
  weight_ih = register_parameter("weight_ih", uniform_init({4 * hidden, in}, hidden, rng));
  weight_hh = register_parameter("weight_hh", uniform_init({4 * hidden, hidden}, hidden, rng));
  bias_ih = register_parameter("bias_ih", uniform_init({4 * hidden}, hidden, rng));
  bias_hh = register_parameter("bias_hh", uniform_init({4 * hidden}, hidden, rng));
}

LstmState LSTMCell::forward(const Tensor& x, const LstmState& state) const {
  check_cell_input("LSTMCell", x, input_size);
  const int64_t batch = x.size(0);
  LstmResult r =
      lstm(reshape(x, Shape{batch, 1, input_size}), std::vector<int64_t>(batch, 1), state.h, state.c, weights());
  return {r.h_n, r.c_n};
}

RnnStack::RnnStack(const RnnOptions& opt, int gates, const char* who, Rng& rng) : opt_(opt) {
  check_sizes(who, opt.input_size, opt.hidden_size);
  if (opt.num_layers < 1) throw std::invalid_argument(std::string(who) + ": num_layers " + std::to_string(opt.num_layers) + " < 1");
  if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
    throw std::invalid_argument(std::string(who) + ": dropout " + std::to_string(opt.dropout) + " outside [0, 1)");
  const int64_t H = opt.hidden_size, GH = gates * H, D = opt.bidirectional ? 2 : 1;
  for (int64_t k = 0; k < opt.num_layers; ++k)
    for (int64_t dir = 0; dir < D; ++dir) {
      const std::string sfx = "_l" + std::to_string(k) + (dir ? "_reverse" : "");
      const int64_t in = k == 0 ? opt.input_size : D * H;
      RnnWeights w;
      w.weight_ih = register_parameter("weight_ih" + sfx, uniform_init({GH, in}, H, rng));
      w.weight_hh = register_parameter("weight_hh" + sfx, uniform_init({GH, H}, H, rng));
      w.bias_ih = register_parameter("bias_ih" + sfx, uniform_init({GH}, H, rng));
      w.bias_hh = register_parameter("bias_hh" + sfx, uniform_init({GH}, H, rng));
      w_.push_back(w);
    }
  rng_ = &register_rng("dropout_rng", dropout_seed(opt.dropout, rng));
}

RnnWeights RnnStack::weights(int64_t layer, int direction) const {
  const int64_t D = opt_.bidirectional ? 2 : 1;
  if (layer < 0 || layer >= opt_.num_layers || direction < 0 || direction >= D)
    throw std::invalid_argument("RnnStack::weights: no layer " + std::to_string(layer) + " direction " +
                                std::to_string(direction));
  return w_[layer * D + direction];
}

LstmResult RnnStack::run(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const Tensor& c0,
                         bool is_lstm) const {
  const char* who = is_lstm ? "LSTM" : "GRU";
  const int64_t H = opt_.hidden_size, D = opt_.bidirectional ? 2 : 1, L = opt_.num_layers;
  if (!x.defined() || x.dim() != 3 || x.size(2) != opt_.input_size)
    throw std::invalid_argument(std::string(who) + ": x must be [batch, seq_len, " + std::to_string(opt_.input_size) +
                                "], got " + shape_str(x));
  const int64_t batch = x.size(0);
  for (const Tensor* s : {&h0, &c0})
    if (s->defined() && s->shape() != Shape{L * D, batch, H})
      throw std::invalid_argument(std::string(who) + ": initial state must be [layers*directions, batch, hidden] = " +
                                  Shape{L * D, batch, H}.str() + ", got " + s->shape().str());
  // Initial state of layer-direction i: [batch, H], or undefined (zeros).
  auto initial = [&](const Tensor& s, int64_t i) {
    return s.defined() ? reshape(slice(s, 0, i, 1), Shape{batch, H}) : Tensor();
  };

  Tensor in = x;
  std::vector<Tensor> hs, cs;  // [1, batch, H] each, in layer*D + direction order
  for (int64_t k = 0; k < L; ++k) {
    std::vector<Tensor> outs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t i = k * D + dir;
      const RnnDirection rd = dir ? RnnDirection::Reverse : RnnDirection::Forward;
      if (is_lstm) {
        LstmResult r = lstm(in, lengths, initial(h0, i), initial(c0, i), w_[i], rd);
        outs.push_back(r.output);
        hs.push_back(reshape(r.h_n, Shape{1, batch, H}));
        cs.push_back(reshape(r.c_n, Shape{1, batch, H}));
      } else {
        GruResult r = gru(in, lengths, initial(h0, i), w_[i], rd);
        outs.push_back(r.output);
        hs.push_back(reshape(r.h_n, Shape{1, batch, H}));
      }
    }
    // [batch, seq_len, D*H]: forward features first, then reverse (PyTorch's order)
    in = D == 1 ? outs[0] : concat(outs, 2);
    if (k + 1 < L && opt_.dropout > 0.0f) in = dropout(in, opt_.dropout, is_training(), *rng_);
  }
  LstmResult out;
  out.output = in;
  out.h_n = hs.size() == 1 ? hs[0] : concat(hs, 0);
  if (is_lstm) out.c_n = cs.size() == 1 ? cs[0] : concat(cs, 0);
  return out;
}

GRU::GRU(const RnnOptions& opt, Rng& rng) : RnnStack(opt, 3, "GRU", rng) {}

GruResult GRU::forward(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0) const {
  LstmResult r = run(x, lengths, h0, Tensor(), false);
  return {r.output, r.h_n};
}

LSTM::LSTM(const RnnOptions& opt, Rng& rng) : RnnStack(opt, 4, "LSTM", rng) {}

LstmResult LSTM::forward(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const Tensor& c0) const {
  return run(x, lengths, h0, c0, true);
}

}  // namespace attn::nn
