// The benchmark peer of `attn bench train|decode --model luong`
// (bench/peers/torch_luong.py) computes what attn's luong computes: on the
// peer's parameters (tests/oracle/luong_peer.py, float64) attn's luong with the
// bench's settings (LSTM, general score, global window, input feeding,
// decoder_init mean) gives the same label-smoothed loss and gradients on a padded
// batch, and the same log-probabilities for two search steps. Otherwise the
// benchmark would time two different models against each other.
#include <gtest/gtest.h>

#include "attn/autograd/node.h"
#include "attn/models/luong/luong.h"
#include "attn/models/kinds.h"
#include "oracle.h"

namespace attn::testing::parity_luong_peer_test {
namespace {

// V 11, E 6, He 5 per direction, Hd 8 (the oracle's arguments below)
models::ModelConfig peer_shape() {
  models::ModelConfig c = models::model_config("luong");
  c.src_vocab = c.tgt_vocab = 11;
  c.embed = 6;
  models::LuongConfig& l = c.section<models::LuongConfig>();
  l.encoder_hidden = 5;
  l.decoder_hidden = 8;
  l.cell = models::CellType::Lstm;
  l.score = models::LuongScore::General;
  l.window = models::LuongWindow::Global;
  l.decoder_init = models::DecoderInit::Mean;
  c.dropout = 0.0;
  return c;
}

std::vector<int64_t> as_lengths(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(int64_t(t.data()[i]));
  return out;
}

TEST(ParityTorchLuongPeer, LossGradientsAndSearchStepsMatchAttnLuong) {
  const SafetensorsFile f = run_oracle("luong_peer.py", "11 6 5 8");
  const models::ModelConfig c = peer_shape();
  Rng init(1);
  models::Luong model(c, init, 1);
  model.train(false);
  EXPECT_EQ(load_oracle_params(model, f), 20);  // the peer's 20 tensors, each with its attn counterpart
  data::Seq2SeqBatch b;
  b.src = f.get("src");
  b.src_lengths = as_lengths(f.get("lengths"));
  b.tgt_in = f.get("tgt_in");
  b.tgt_out = f.get("tgt_out");
  models::LossOptions lo;
  lo.label_smoothing = 0.1f;  // as the bench and the peer
  Tensor loss = model.loss(b, lo);
  EXPECT_CLOSE(reshape(loss, {1}), f.get("loss"), 1e-5, "loss");
  backward(loss);
  for (auto& [name, p] : model.named_parameters()) EXPECT_CLOSE(p.grad(), f.get("grad." + name), 3e-4, name);

  NoGradGuard no_grad;
  models::Encoded e = model.encode(b.src, b.src_lengths);
  models::StepOutput s1 = model.step(e.memory, e.state, Tensor::full({3}, float(c.specials.bos)), 0);
  models::StepOutput s2 = model.step(e.memory, s1.state, f.get("prev2"), 1);
  EXPECT_CLOSE(s1.log_probs, f.get("log_probs1"), 1e-4, "search step 1 log-probabilities");
  EXPECT_CLOSE(s2.log_probs, f.get("log_probs2"), 1e-4, "search step 2 log-probabilities");
}

}  // namespace
}  // namespace attn::testing::parity_luong_peer_test
