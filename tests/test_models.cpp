// Translation models: config parsing, the unbind op's gradient, whole-model
// gradients by finite differences, and teacher forcing == step-by-step decoding.
#include <gtest/gtest.h>

#include "attn/tensor/pool.h"

#include <cmath>

#include "attn/autograd/ops_sequence.h"
#include "attn/models/config.h"
#include "attn/attention/additive_step.h"
#include "attn/models/output_loss.h"
#include "attn/models/rnnsearch/rnnsearch_decoder.h"
#include "attn/nn/rnn.h"
#include "attn/models/seq2seq.h"
#include "attention_reference.h"
#include "tiny_models.h"
#include "compare.h"
#include "gradcheck.h"

namespace attn::testing::models_test {
namespace {
using models::ModelConfig;
using T = std::vector<Tensor>;

ATTN_GRADCHECK_CASE({"unbind", "[4, 2, 3] -> 4 x [2, 3], reassembled with weights", {{4, 2, 3}}, [](const T& x) {
                       std::vector<Tensor> rows = unbind0(x[0]);
                       // use rows in a different order and one twice, one not at all
                       return concat({rows[2], affine(rows[0], 2.0f), mul(rows[3], rows[0])}, 0);
                     }});

// lengths 3, 0 (an empty sentence) and 2 of a batch padded to 4: 5 rows
ATTN_GRADCHECK_CASE({"pack_padded", "[3, 4, 2] -> [5, 2], lengths 3, 0, 2", {{3, 4, 2}}, [](const T& x) {
                       return pack_padded(x[0], padded_rows({3, 0, 2}, 4));
                     }});
ATTN_GRADCHECK_CASE({"unpack_padded", "[5, 2] -> [3, 4, 2], lengths 3, 0, 2", {{5, 2}}, [](const T& x) {
                       return unpack_padded(x[0], padded_rows({3, 0, 2}, 4));
                     }});

TEST(PaddedRows, PackKeepsRealPositionsAndUnpackZerosThePadding) {
  const PaddedRows r = padded_rows({3, 0, 2}, 4);
  EXPECT_EQ(r.count(), 5);
  Tensor x = Tensor::empty({3, 4, 2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = float(i + 1);
  const Tensor rows = pack_padded(x, r);
  ASSERT_EQ(rows.shape(), Shape({5, 2}));
  // sentence 0's positions 0..2, then sentence 2's positions 0..1
  const std::vector<float> want = {1, 2, 3, 4, 5, 6, 17, 18, 19, 20};
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(rows.data()[i], want[size_t(i)]) << i;
  const Tensor back = unpack_padded(rows, r);
  ASSERT_EQ(back.shape(), x.shape());
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t c = 0; c < 2; ++c) {
        const int64_t i = (b * 4 + j) * 2 + c;
        EXPECT_EQ(back.data()[i], j < r.lengths[size_t(b)] ? x.data()[i] : 0.0f) << b << " " << j;
      }
  EXPECT_THROW(padded_rows({5}, 4), std::invalid_argument);
  EXPECT_THROW(pack_padded(Tensor::zeros({2, 4, 2}), r), std::invalid_argument);
  EXPECT_THROW(unpack_padded(Tensor::zeros({4, 2}), r), std::invalid_argument);
}

Tensor targets_with_padding(int64_t N, int64_t V) {
  Tensor t = Tensor::empty({N});
  for (int64_t i = 0; i < N; ++i) t.data()[i] = i % 4 == 3 ? 0.0f : float((i * 7 + 1) % V);  // every 4th row: pad (0)
  return t;
}

ATTN_GRADCHECK_CASE({"output_cross_entropy", "bias, smoothing 0.2, padding rows", {{6, 5}, {9, 5}, {9}}, [](const T& x) {
                       CrossEntropyOptions o;
                       o.ignore_index = 0;
                       o.label_smoothing = 0.2f;
                       // scaled so that the incoming gradient is not 1
                       return affine(models::output_cross_entropy(x[0], x[1], x[2], targets_with_padding(6, 9), o), 1.7f);
                     }});
ATTN_GRADCHECK_CASE({"output_cross_entropy", "no bias, no smoothing", {{4, 3}, {7, 3}}, [](const T& x) {
                       return models::output_cross_entropy(x[0], x[1], Tensor(), targets_with_padding(4, 7));
                     }});

// Equal to cross_entropy(linear(x, W, b)) in value and every gradient, over
// several row blocks and a vocabulary that is not a multiple of the vector width.
TEST(OutputCrossEntropy, MatchesLinearPlusCrossEntropy) {
  Rng rng(3);
  const int64_t N = 300, R = 24, V = 1003;
  for (bool with_bias : {true, false}) {
    Tensor x = randn({N, R}, rng).set_requires_grad(true), W = randn({V, R}, rng, 0.3f).set_requires_grad(true);
    Tensor b = with_bias ? randn({V}, rng).set_requires_grad(true) : Tensor();
    Tensor t = targets_with_padding(N, V);
    CrossEntropyOptions o;
    o.ignore_index = 0;
    o.label_smoothing = 0.1f;
    Tensor ref = cross_entropy(linear(x, W, b), t, o);
    backward(affine(ref, 0.5f));
    Tensor rx = x.grad(), rW = W.grad(), rb = with_bias ? b.grad() : Tensor();
    // the default (one block here), blocks of 128 rows and blocks of 7 (the last one partial)
    for (int64_t block_rows : {int64_t(0), int64_t(128), int64_t(7)}) {
      SCOPED_TRACE("block_rows " + std::to_string(block_rows));
      x.zero_grad();
      W.zero_grad();
      if (with_bias) b.zero_grad();
      Tensor fused = models::output_cross_entropy(x, W, b, t, o, block_rows);
      backward(affine(fused, 0.5f));
      EXPECT_NEAR(fused.item(), ref.item(), 1e-5 * std::abs(ref.item()));
      EXPECT_NORMWISE_CLOSE(x.grad(), rx, 1e-4, "dx");
      EXPECT_NORMWISE_CLOSE(W.grad(), rW, 1e-4, "dW");
      if (with_bias) EXPECT_NORMWISE_CLOSE(b.grad(), rb, 1e-4, "db");
    }
  }
  EXPECT_EQ(models::output_block_rows(8000), 1048);  // 32 MiB of logits
  EXPECT_EQ(models::output_block_rows(1 << 20), models::kOutputBlockMinRows);
  NoGradGuard ng;  // without grad mode: the loss alone
  Tensor x = randn({5, 4}, rng), W = randn({11, 4}, rng);
  EXPECT_NEAR(models::output_cross_entropy(x, W, Tensor(), targets_with_padding(5, 11)).item(),
              cross_entropy(linear(x, W, Tensor()), targets_with_padding(5, 11)).item(), 1e-5);
  EXPECT_THROW(models::output_cross_entropy(x, W, Tensor(), Tensor::full({5}, 11.0f)), std::invalid_argument);
  EXPECT_THROW(models::output_cross_entropy(x, randn({11, 3}, rng), Tensor(), targets_with_padding(5, 11)),
               std::invalid_argument);
}

// inputs: emb [T,B,E], keys [B,S,A], values [B,S,Dv], s0 [B,Hd], W1, v, w_ih, w_hh, b_ih, b_hh
models::DecoderLoopOutput fused_loop(const T& x, const Tensor& lengths) {
  return models::rnnsearch_decoder(x[0], x[1], x[2], lengths, x[3], {x[4], x[5], x[6], x[7], x[8], x[9]});
}
// T=3, B=2, E=2, S=4, A=3, Dv=2, Hd=2: small sizes, every path including a padded source
ATTN_GRADCHECK_CASE({"rnnsearch_decoder", "T 3, lengths 4 and 2, states and contexts",
                     {{3, 2, 2}, {2, 4, 3}, {2, 4, 2}, {2, 2}, {3, 2}, {3}, {6, 4}, {6, 2}, {6}, {6}},
                     [](const T& x) {
                       auto o = fused_loop(x, Tensor::from({4.0f, 2.0f}, {2}));
                       return concat({reshape(o.states, {6, 2}), reshape(o.contexts, {6, 2})}, 1);
                     }});
ATTN_GRADCHECK_CASE({"rnnsearch_decoder", "attention size 17 (vector path), states only",
                     {{2, 3, 2}, {3, 3, 17}, {3, 3, 3}, {3, 4}, {17, 4}, {17}, {12, 5}, {12, 4}, {12}, {12}},
                     [](const T& x) { return fused_loop(x, Tensor::from({3.0f, 1.0f, 2.0f}, {3})).states; }});

// The decoder loop in double (rnnsearch_decoder.h's equations; PyTorch's GRU:
// r, z, n gate rows of w_ih / w_hh), its attention from attention_reference.h,
// which shares no kernel with the library: x = the ten inputs of fused_loop.
// Returns L = sum(states * rs) + sum(contexts * rc), and the states [T, B, Hd]
// and contexts [T, B, Dv] when asked.
struct LoopDims {
  int64_t T, B, E, S, A, Dv, Hd;
};
double decoder_reference(const std::vector<std::vector<double>>& x, const std::vector<int64_t>& len, const LoopDims& dims,
                         const std::vector<double>& rs, const std::vector<double>& rc, std::vector<double>* states = nullptr,
                         std::vector<double>* contexts = nullptr) {
  const int64_t Tn = dims.T, B = dims.B, E = dims.E, S = dims.S, A = dims.A, Dv = dims.Dv, Hd = dims.Hd;
  const auto &emb = x[0], &keys = x[1], &values = x[2], &W1 = x[4], &v = x[5], &wih = x[6], &whh = x[7], &bih = x[8],
             &bhh = x[9];
  std::vector<double> s = x[3], qp(static_cast<size_t>(A)), w(static_cast<size_t>(S)), in(static_cast<size_t>(E + Dv)),
                      gi(static_cast<size_t>(3 * Hd)), gh(static_cast<size_t>(3 * Hd));
  if (states) states->assign(size_t(Tn * B * Hd), 0.0);
  if (contexts) contexts->assign(size_t(Tn * B * Dv), 0.0);
  auto sigmoid = [](double u) { return 1.0 / (1.0 + std::exp(-u)); };
  double L = 0;
  for (int64_t t = 0; t < Tn; ++t)
    for (int64_t b = 0; b < B; ++b) {
      double* sb = &s[size_t(b * Hd)];
      for (int64_t a = 0; a < A; ++a) {  // qp = W1 s
        qp[size_t(a)] = 0;
        for (int64_t k = 0; k < Hd; ++k) qp[size_t(a)] += W1[size_t(a * Hd + k)] * sb[k];
      }
      for (int64_t e = 0; e < E; ++e) in[size_t(e)] = emb[size_t((t * B + b) * E + e)];
      additive_attend_row(qp.data(), &keys[size_t(b * S * A)], v.data(), A, &values[size_t(b * S * Dv)], Dv,
                          len[size_t(b)], S, w.data(), &in[size_t(E)]);  // the context lands after the embedding
      for (int64_t g = 0; g < 3 * Hd; ++g) {
        gi[size_t(g)] = bih[size_t(g)];
        gh[size_t(g)] = bhh[size_t(g)];
        for (int64_t k = 0; k < E + Dv; ++k) gi[size_t(g)] += wih[size_t(g * (E + Dv) + k)] * in[size_t(k)];
        for (int64_t k = 0; k < Hd; ++k) gh[size_t(g)] += whh[size_t(g * Hd + k)] * sb[k];
      }
      for (int64_t k = 0; k < Hd; ++k) {
        const double r = sigmoid(gi[size_t(k)] + gh[size_t(k)]), z = sigmoid(gi[size_t(Hd + k)] + gh[size_t(Hd + k)]);
        const double n = std::tanh(gi[size_t(2 * Hd + k)] + r * gh[size_t(2 * Hd + k)]);
        sb[k] = (1 - z) * n + z * sb[k];
        L += sb[k] * rs[size_t((t * B + b) * Hd + k)];
        if (states) (*states)[size_t((t * B + b) * Hd + k)] = sb[k];
      }
      for (int64_t d = 0; d < Dv; ++d) {
        L += in[size_t(E + d)] * rc[size_t((t * B + b) * Dv + d)];
        if (contexts) (*contexts)[size_t((t * B + b) * Dv + d)] = in[size_t(E + d)];
      }
    }
  return L;
}

// The fused loop against the double loop at sizes that take the threaded and
// vector paths: states and contexts element-wise, and each input's gradient
// along a random direction u against the central difference of the double
// loop, (L(x + h u) - L(x - h u)) / 2h.
TEST(RnnSearchDecoder, MatchesDoublePrecisionLoop) {
  const int64_t Tn = 5, B = 40, E = 24, S = 30, A = 32, Dv = 48, Hd = 40;
  Rng rng(9);
  std::vector<Tensor> x = {randn({Tn, B, E}, rng),           randn({B, S, A}, rng),
                           randn({B, S, Dv}, rng),           randn({B, Hd}, rng),
                           randn({A, Hd}, rng, 0.2f),        randn({A}, rng),
                           randn({3 * Hd, E + Dv}, rng, 0.15f), randn({3 * Hd, Hd}, rng, 0.15f),
                           randn({3 * Hd}, rng, 0.1f),       randn({3 * Hd}, rng, 0.1f)};
  for (auto& t : x) t.set_requires_grad(true);
  std::vector<int64_t> len;
  Tensor lengths = Tensor::empty({B});
  for (int64_t b = 0; b < B; ++b) len.push_back(1 + (b * 7) % S), lengths.data()[b] = float(len.back());
  Tensor rs = randn({Tn, B, Hd}, rng), rc = randn({Tn, B, Dv}, rng);
  auto o = fused_loop(x, lengths);
  backward(add(sum_all(mul(o.states, rs)), sum_all(mul(o.contexts, rc))));

  std::vector<std::vector<double>> xd;
  for (const Tensor& t : x) xd.push_back(to_double(t));
  const LoopDims dims{Tn, B, E, S, A, Dv, Hd};
  std::vector<double> st, ct;
  decoder_reference(xd, len, dims, to_double(rs), to_double(rc), &st, &ct);
  EXPECT_REL_CLOSE(o.states, to_tensor(st, {Tn, B, Hd}), 1e-4, 1e-2, 0.0, "states");
  EXPECT_REL_CLOSE(o.contexts, to_tensor(ct, {Tn, B, Dv}), 1e-4, 1e-2, 0.0, "contexts");
  const char* names[] = {"emb", "keys", "values", "s0", "W1", "v", "w_ih", "w_hh", "b_ih", "b_hh"};
  for (size_t i = 0; i < x.size(); ++i) {
    const std::vector<double> g = to_double(x[i].grad()), x0 = xd[i];
    std::vector<double> u(g.size());
    double ana = 0, mag = 0;  // sum_k g_k u_k and sum_k |g_k u_k|
    for (size_t k = 0; k < g.size(); ++k) u[k] = rng.normal(), ana += g[k] * u[k], mag += std::abs(g[k] * u[k]);
    const double h = 1e-4;
    double L[2];
    for (int side = 0; side < 2; ++side) {
      for (size_t k = 0; k < u.size(); ++k) xd[i][k] = x0[k] + (side ? -h : h) * u[k];
      L[side] = decoder_reference(xd, len, dims, to_double(rs), to_double(rc));
    }
    xd[i] = x0;
    const double num = (L[0] - L[1]) / (2 * h);
    EXPECT_NEAR(ana, num, 1e-4 * mag) << "d" << names[i] << " along u: analytic " << ana << ", numeric " << num;
    EXPECT_GT(mag, 1e-3) << names[i];  // a gradient to compare
  }
  EXPECT_THROW(models::rnnsearch_decoder(x[0], x[1], x[2], Tensor::full({B}, float(S + 1)), x[3],
                                         {x[4], x[5], x[6], x[7], x[8], x[9]}),
               std::invalid_argument);
  EXPECT_THROW(models::rnnsearch_decoder(x[0], x[2], x[1], lengths, x[3], {x[4], x[5], x[6], x[7], x[8], x[9]}),
               std::invalid_argument);
}

// Source lengths in [0, S] from both sides: S and 0 accepted (a row that sees no
// key gets zero contexts), S + 1, -1 and 1.5 refused.
TEST(RnnSearchDecoder, LengthsFromZeroToS) {
  Rng rng(10);
  const int64_t Tn = 2, B = 3, E = 2, S = 4, A = 3, Dv = 2, Hd = 2;
  const std::vector<Tensor> x = {randn({Tn, B, E}, rng), randn({B, S, A}, rng),  randn({B, S, Dv}, rng),
                                 randn({B, Hd}, rng),    randn({A, Hd}, rng),     randn({A}, rng),
                                 randn({3 * Hd, E + Dv}, rng), randn({3 * Hd, Hd}, rng), randn({3 * Hd}, rng),
                                 randn({3 * Hd}, rng)};
  auto o = fused_loop(x, Tensor::from({float(S), 0.0f, 1.0f}, {B}));
  for (int64_t t = 0; t < Tn; ++t)
    for (int64_t d = 0; d < Dv; ++d) {
      EXPECT_EQ(o.contexts.data()[(t * B + 1) * Dv + d], 0.0f) << "length 0";
      EXPECT_NE(o.contexts.data()[(t * B + 0) * Dv + d], 0.0f) << "length S";
    }
  for (float bad : {float(S + 1), -1.0f, 1.5f})
    EXPECT_THROW(fused_loop(x, Tensor::from({float(S), bad, 1.0f}, {B})), std::invalid_argument) << "length " << bad;
}

TEST(ModelConfig, UnknownKeysAndBadValuesNameTheKey) {
  try {
    models::model_config_from_json(R"({"type": "rnnsearch", "embd": 32})", "model");
    FAIL() << "unknown key accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.embd: unknown key"), std::string::npos) << e.what();
  }
  try {
    models::model_config_from_json(R"({"type": "gpt"})", "model");
    FAIL() << "bad enum accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.type"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rnnsearch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(models::model_config_from_json(R"({"embed": "big"})"), std::invalid_argument);
  EXPECT_THROW(models::model_config_from_json(R"({"embed": 2.5})"), std::invalid_argument);
}

// Model files written before the kinds had config sections carry every flat
// field of every kind: each kind still reads them (its own keys, the others'
// as legacy keys, checked as before and ignored) and writes its own only.
TEST(ModelConfig, FilesWithEveryFlatFieldStillLoad) {
  const std::string text_fields =
      R"("src_vocab": 50, "tgt_vocab": 60, "embed": 8, "encoder_hidden": 6, "encoder_layers": 1,
         "bidirectional": true, "decoder_hidden": 12, "decoder_layers": 1, "attention": 5, "score": "general",
         "window": "global", "window_half_width": 10, "readout": 8, "decoder_init": "mean", "dropout": 0.1,
         "tied_embeddings": "none", "pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3)";
  for (const char* type : {"rnnsearch", "luong"}) {
    SCOPED_TRACE(type);
    const ModelConfig c = models::model_config_from_json(std::string(R"({"type": ")") + type + R"(", "cell": "gru", )" +
                                                         text_fields + "}");
    EXPECT_NO_THROW(models::validate(c));
    EXPECT_EQ(rnn_of(c).decoder_hidden, 12);
    const std::string written = models::to_json(c);
    EXPECT_EQ(written.find("\"readout\"") != std::string::npos, std::string(type) == "rnnsearch") << written;
    EXPECT_EQ(written.find("\"score\"") != std::string::npos, std::string(type) == "luong") << written;
    EXPECT_EQ(models::to_json(models::model_config_from_json(written)), written);
  }
  const std::string captioner =
      R"({"type": "show_attend_tell", "src_vocab": 0, "tgt_vocab": 9, "embed": 6, "encoder_hidden": 256,
          "encoder_layers": 1, "bidirectional": true, "decoder_hidden": 7, "decoder_layers": 1, "cell": "lstm",
          "attention": 5, "score": "general", "window": "global", "window_half_width": 10, "readout": 256,
          "decoder_init": "mean", "dropout": 0, "tied_embeddings": "none", "pad_id": 0, "bos_id": 1, "eos_id": 2,
          "unk_id": 3, "image_size": 8, "grid": 2, "cnn_channels": 8, "cnn_context_blocks": 0,
          "image_attention": "hard", "attention_reg": 1, "reinforce_weight": 1, "entropy_bonus": 0.01,
          "baseline_decay": 0.9, "hard_expected_prob": 0.5})";
  const ModelConfig c = models::model_config_from_json(captioner);
  EXPECT_NO_THROW(models::validate(c));
  EXPECT_EQ(captioner_of(c).image_attention, models::ImageAttention::Hard);
  EXPECT_EQ(models::to_json(c).find("encoder_hidden"), std::string::npos);
  // the legacy keys keep their checks: types, bounds, and the captioner's one LSTM layer
  auto error_of = [](const std::string& json) {
    try {
      models::validate(models::model_config_from_json(json));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(R"({"type": "rnnsearch", "window_half_width": -1})").find("window_half_width"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "rnnsearch", "score": "cosine"})").find("model.score"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "show_attend_tell", "cell": "gru"})").find("cell"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "show_attend_tell", "decoder_layers": 2})").find("decoder_layers"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "luong", "colour": 3})").find("model.colour: unknown key"), std::string::npos);
}

TEST(ModelConfig, JsonRoundTripAndValidation) {
  ModelConfig c = models::model_config("luong");
  c.src_vocab = 50;
  c.tgt_vocab = 60;
  luong_of(c).cell = models::CellType::Lstm;
  luong_of(c).score = models::LuongScore::Concat;
  luong_of(c).decoder_layers = 2;
  c.dropout = 0.3;
  ModelConfig d = models::model_config_from_json(models::to_json(c));
  EXPECT_EQ(models::to_json(c), models::to_json(d));
  EXPECT_NO_THROW(models::validate(d));
  ModelConfig bad = models::model_config("rnnsearch");  // rnnsearch is GRU with one decoder layer
  bad.src_vocab = 50, bad.tgt_vocab = 60;
  EXPECT_NO_THROW(models::validate(bad));
  rnn_of(bad).cell = models::CellType::Lstm;
  EXPECT_THROW(models::validate(bad), std::invalid_argument);
  rnn_of(bad).cell = models::CellType::Gru, rnn_of(bad).decoder_layers = 2;
  EXPECT_THROW(models::validate(bad), std::invalid_argument);
  bad = c;
  bad.tied_embeddings = models::TiedEmbeddings::All;  // needs a joint vocabulary
  EXPECT_THROW(models::validate(bad), std::invalid_argument);
  bad = c;
  luong_of(bad).window = models::LuongWindow::LocalM;  // local windows: dot / general only
  EXPECT_THROW(models::validate(bad), std::invalid_argument);
}

struct Variant {
  const char* name;
  ModelConfig config;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  v.push_back({"rnnsearch_mean", tiny("rnnsearch")});
  ModelConfig c = tiny("rnnsearch");
  rnnsearch_of(c).decoder_init = models::DecoderInit::Backward;
  rnnsearch_of(c).encoder_layers = 2;
  rnnsearch_of(c).readout = c.embed;
  c.tied_embeddings = models::TiedEmbeddings::Decoder;
  v.push_back({"rnnsearch_backward_2layers_tied", c});
  c = tiny("luong");
  luong_of(c).cell = models::CellType::Lstm;
  luong_of(c).decoder_layers = 2;
  v.push_back({"luong_lstm_general_2layers", c});
  c = tiny("luong");
  luong_of(c).score = models::LuongScore::Concat;
  luong_of(c).bidirectional = false;
  v.push_back({"luong_gru_concat_unidirectional", c});
  c = tiny("luong");
  luong_of(c).score = models::LuongScore::Dot;
  luong_of(c).encoder_hidden = 7;
  luong_of(c).bidirectional = false;
  luong_of(c).window = models::LuongWindow::LocalM;
  luong_of(c).window_half_width = 1;
  v.push_back({"luong_gru_dot_local_m", c});
  c = tiny("luong");
  luong_of(c).window = models::LuongWindow::LocalP;
  luong_of(c).window_half_width = 2;
  v.push_back({"luong_gru_general_local_p", c});
  return v;
}

class Models : public ::testing::TestWithParam<Variant> {};

// Every parameter's gradient (a few elements each) against central differences
// of the teacher-forced loss with label smoothing.
TEST_P(Models, LossGradientsMatchFiniteDifferences) {
  const Variant& v = GetParam();
  Rng init(7);
  auto model = models::make_model(v.config, init, 3);
  data::Seq2SeqBatch b = tiny_batch(v.config.src_vocab, v.config.tgt_vocab);
  models::LossOptions lo;
  lo.label_smoothing = 0.1f;
  model->zero_grad();
  Tensor loss = model->loss(b, lo);
  ASSERT_EQ(loss.numel(), 1);
  ASSERT_TRUE(std::isfinite(loss.item()));
  backward(loss);
  Rng pick(11);
  int checked = 0;
  double worst = 0;
  std::string worst_where;
  for (auto& [name, p] : model->named_parameters()) {
    Tensor g = p.grad();
    ASSERT_TRUE(g.defined()) << name << " got no gradient";
    for (int k = 0; k < 3; ++k) {
      int64_t i = int64_t(pick.below(uint64_t(p.numel())));
      const float orig = p.data()[i], h = 1e-2f;
      double lp, lm;
      {
        NoGradGuard ng;
        p.data()[i] = orig + h;
        lp = model->loss(b, lo).item();
        p.data()[i] = orig - h;
        lm = model->loss(b, lo).item();
        p.data()[i] = orig;
      }
      const double num = (lp - lm) / (2 * h), ana = g.data()[i];
      const double err = std::abs(num - ana) / (3e-2 * (std::abs(num) + std::abs(ana)) + 2e-3);
      if (raise_worst(worst, err))  // a NaN stays the worst
        worst_where = name + "[" + std::to_string(i) + "] num " + std::to_string(num) + " ana " + std::to_string(ana);
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_LE(worst, 1.0) << worst_where;
}

// step() from encode(), fed the reference tokens, gives the same log-probs as
// the teacher-forced logits (eval mode: no dropout), and weights that are
// distributions over each source's valid positions.
TEST_P(Models, StepByStepEqualsTeacherForcing) {
  const Variant& v = GetParam();
  ModelConfig c = v.config;
  c.dropout = 0.3;  // must not matter in eval mode
  Rng init(5);
  auto model = models::make_model(c, init, 3);
  model->train(false);
  NoGradGuard ng;
  data::Seq2SeqBatch b = tiny_batch(c.src_vocab, c.tgt_vocab);
  const int64_t B = 3, T = b.tgt_in.size(1), V = c.tgt_vocab, S = b.src.size(1);
  Tensor logits = model->forced_logits(b);  // [T * B, V]
  ASSERT_EQ(logits.shape(), (Shape{T * B, V}));
  Tensor ref = log_softmax(logits, -1);
  models::Encoded e = model->encode(b.src, b.src_lengths);
  models::DecoderState s = e.state;
  double worst = 0;
  for (int64_t t = 0; t < T; ++t) {
    Tensor prev = Tensor::empty({B});
    for (int64_t i = 0; i < B; ++i) prev.data()[i] = b.tgt_in.data()[i * T + t];
    models::StepOutput o = model->step(e.memory, s, prev, t);
    ASSERT_EQ(o.log_probs.shape(), (Shape{B, V}));
    ASSERT_EQ(o.attention.names(), std::vector<std::string>{models::kAttentionMap});
    const Tensor& weights = o.attention.items[0].second;
    ASSERT_EQ(weights.shape(), (Shape{B, S}));
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t k = 0; k < V; ++k)
        worst = nan_max(worst, std::abs(double(o.log_probs.data()[i * V + k]) - ref.data()[(t * B + i) * V + k]));
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        float w = weights.data()[i * S + j];
        if (j >= b.src_lengths[size_t(i)]) EXPECT_EQ(w, 0.0f) << "weight past the source length";
        EXPECT_GE(w, 0.0f);
        sum += w;
      }
      // local windows may exclude every position (local-m beyond the source): sum 0 or 1
      if (c.type != "luong" || luong_of(c).window == models::LuongWindow::Global) EXPECT_NEAR(sum, 1.0, 1e-5);
    }
    s = o.state;
  }
  EXPECT_LT(worst, 1e-4);
}

// Dropout is active in training mode and draws from the model's own Rng.
TEST_P(Models, DropoutOnlyInTrainingAndSeeded) {
  ModelConfig c = GetParam().config;
  c.dropout = 0.5;
  data::Seq2SeqBatch b = tiny_batch(c.src_vocab, c.tgt_vocab);
  Rng i1(5), i2(5);
  auto m1 = models::make_model(c, i1, 9), m2 = models::make_model(c, i2, 9);
  NoGradGuard ng;
  float l1 = m1->loss(b).item(), l2 = m2->loss(b).item(), l1b = m1->loss(b).item();
  EXPECT_EQ(l1, l2);   // same seeds, same masks
  EXPECT_NE(l1, l1b);  // the next batch draws new masks
  m1->train(false);
  EXPECT_EQ(m1->loss(b).item(), m1->loss(b).item());
}

// A training step frees everything it made: the memory in use after a step
// is the same after every step. An autograd node that keeps its own output
// alive (a reference cycle through the output's grad_fn) would leak the whole
// graph behind it each step (Luong's softmax did: 24 GB in 8 minutes).
TEST_P(Models, TrainingStepLeaksNothing) {
  const Variant& v = GetParam();
  Rng init(7);
  auto model = models::make_model(v.config, init, 3);
  data::Seq2SeqBatch b = tiny_batch(v.config.src_vocab, v.config.tgt_vocab);
  auto step = [&] {
    model->zero_grad();
    backward(model->loss(b));
  };
  step();
  step();
  const size_t in_use = pool::stats().bytes_in_use;
  for (int i = 0; i < 3; ++i) {
    step();
    EXPECT_EQ(pool::stats().bytes_in_use, in_use) << "after step " << i + 3;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Models, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

TEST(Models, SelectRowsRepeatsAndReorders) {
  Tensor x = Tensor::from({0, 1, 10, 11, 20, 21}, {3, 2});
  Tensor y = models::select_rows(x, {2, 0, 0});
  EXPECT_EQ(y.to_vector(), (std::vector<float>{20, 21, 0, 1, 0, 1}));
  EXPECT_THROW(models::select_rows(x, {3}), std::invalid_argument);
}

TEST(Models, RejectsBadSources) {
  Rng init(1);
  auto m = models::make_model(tiny("rnnsearch"), init, 1);
  EXPECT_THROW(m->encode(Tensor::zeros({2, 3}), {3, 0}), std::invalid_argument);  // empty source
  EXPECT_THROW(m->encode(Tensor::zeros({2, 3}), {3}), std::invalid_argument);     // lengths count
  EXPECT_THROW(m->encode(Tensor::full({1, 2}, 99.0f), {2}), std::invalid_argument);  // id out of range
}

}  // namespace
}  // namespace attn::testing::models_test
