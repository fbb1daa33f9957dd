// The search step's kernels and the fused RNNsearch decoder:
//  - rows_gemm (few rows x row-major weight) and nn::StepLinear (row-major and
//    packed) against a double-precision reference on odd shapes;
//  - the fused top-k / log-sum-exp against sorting, and bit-identical to
//    log_softmax_rows' log-probabilities;
//  - the fused rnnsearch decoder (both weight layouts) against RnnSearch::step()
//    on rows that map to sentences in any order and multiplicity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/cpu/threading.h"
#include "attn/decode/search.h"
#include "attn/kernels/rows_gemm.h"
#include "attn/kernels/vocab_topk.h"
#include "attn/models/output_loss.h"
#include "attn/models/kinds.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"
#include "attn/models/rnnsearch/rnnsearch_search.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/step_linear.h"
#include "attn/tensor/random.h"
#include "step_top_check.h"

using namespace attn;

namespace {

std::vector<float> uniform(size_t n, Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(-1, 1);
  return v;
}

TEST(RowsGemm, MatchesReferenceOnOddShapes) {
  Rng rng(5);
  for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 13, 17})
    for (int64_t K : {1, 5, 16, 17, 33, 256})
      for (bool accumulate : {false, true}) {
        const int64_t out = 37, lda = K + 3, ldw = K + 1, ldc = out + 2, o0 = 3, o1 = 34;
        std::vector<float> a = uniform(size_t(m * lda), rng), w = uniform(size_t(out * ldw), rng),
                           c = uniform(size_t(m * ldc), rng);
        const std::vector<float> c0 = c;
        rows_gemm::gemm_wt(m, K, a.data(), lda, w.data(), ldw, o0, o1, c.data(), ldc, accumulate);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t o = 0; o < out + 2; ++o) {
            const float got = c[size_t(i * ldc + o)];
            if (o < o0 || o >= o1) {
              ASSERT_EQ(got, c0[size_t(i * ldc + o)]) << "column " << o << " outside the range was written";
              continue;
            }
            double s = accumulate ? c0[size_t(i * ldc + o)] : 0.0;
            for (int64_t k = 0; k < K; ++k) s += double(a[size_t(i * lda + k)]) * w[size_t(o * ldw + k)];
            ASSERT_NEAR(got, s, 1e-5 * (1 + std::sqrt(double(K)))) << "m " << m << " K " << K << " row " << i << " out " << o;
          }
      }
}

// A row's result does not depend on how many rows share the call (greedy and
// beam search rely on it: a sentence decodes the same in any batch).
TEST(RowsGemm, RowResultIndependentOfRowCount) {
  Rng rng(6);
  const int64_t K = 77, out = 9;
  std::vector<float> a = uniform(size_t(13 * K), rng), w = uniform(size_t(out * K), rng);
  std::vector<float> all(static_cast<size_t>(13 * out)), one(static_cast<size_t>(out));
  rows_gemm::gemm_wt(13, K, a.data(), K, w.data(), K, 0, out, all.data(), out, false);
  for (int64_t i = 0; i < 13; ++i) {
    rows_gemm::gemm_wt(1, K, a.data() + i * K, K, w.data(), K, 0, out, one.data(), out, false);
    for (int64_t o = 0; o < out; ++o) ASSERT_EQ(one[size_t(o)], all[size_t(i * out + o)]) << i << "," << o;
  }
}

// The element types of a prepared weight are one table (nn/step_weight_types.h):
// each row is named, its name reads back to it, and an unknown name is refused
// naming the known ones. StepLinear takes fp32 unless told otherwise.
TEST(StepWeightTypes, EveryRowIsNamedAndReadBack) {
  const nn::StepWeightKernels& f32 = nn::step_weight_kernels(nn::StepWeightType::F32);
  EXPECT_STREQ(f32.name, "fp32");
  EXPECT_EQ(nn::step_weight_type("fp32"), nn::StepWeightType::F32);
  try {
    nn::step_weight_type("int3");
    ADD_FAILURE() << "no error for an unknown type";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown weight type 'int3' (known: fp32, int8, bf16)"), std::string::npos) << e.what();
  }
  Rng rng(3);
  const nn::StepLinear lin(rand_uniform({5, 4}, rng, -1, 1), false);
  EXPECT_EQ(lin.type(), nn::StepWeightType::F32);
}

TEST(StepLinear, RowMajorAndPackedMatchReference) {
  Rng rng(7);
  for (int64_t out : {1, 31, 33, 70})
    for (int64_t K : {3, 40})
      for (bool packed : {false, true}) {
        Tensor W = rand_uniform({out, K}, rng, -1, 1);
        nn::StepLinear lin(W, packed);
        ASSERT_EQ(lin.packed(), packed);
        ASSERT_EQ(lin.units(), (out + 31) / 32);
        for (int64_t m : {1, 6, 13, 25}) {
          std::vector<float> a = uniform(size_t(m * K), rng), c(size_t(m * out), -7.0f);
          // in two calls over disjoint unit ranges, as two threads would
          const int64_t mid = lin.units() / 2;
          lin.apply(m, a.data(), K, 0, mid, c.data(), out);
          lin.apply(m, a.data(), K, mid, lin.units(), c.data(), out);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t o = 0; o < out; ++o) {
              double s = 0;
              for (int64_t k = 0; k < K; ++k) s += double(a[size_t(i * K + k)]) * W.data()[o * K + k];
              ASSERT_NEAR(c[size_t(i * out + o)], s, 1e-5 * (1 + std::sqrt(double(K))))
                  << "out " << out << " K " << K << " packed " << packed << " m " << m;
            }
          // unit by unit into a tile: the same values, bit for bit
          for (int64_t u = 0; u < lin.units(); ++u) {
            std::vector<float> tile(size_t(m * 32), -7.0f);
            nn::StepInput in;
            lin.apply_unit(in.set(nn::StepWeightType::F32, m, K, a.data(), K), u, tile.data(), 32);
            ASSERT_EQ(lin.unit_cols(u), std::min<int64_t>(32, out - u * 32));
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < 32; ++j) {
                if (j < lin.unit_cols(u))
                  ASSERT_EQ(tile[size_t(i * 32 + j)], c[size_t(i * out + u * 32 + j)]) << "unit " << u;
                else
                  ASSERT_EQ(tile[size_t(i * 32 + j)], -7.0f) << "unit " << u << " wrote past its columns";
              }
          }
        }
      }
}

TEST(VocabTopK, MatchesSortingWithTiesAndLogSoftmax) {
  Rng rng(8);
  for (int64_t V : {1, 7, 16, 45, 1000})
    for (int64_t k : {1, 2, 5, 10}) {
      if (k > V) continue;
      std::vector<float> x(static_cast<size_t>(V));
      // few distinct values, so ties are common
      for (float& v : x) v = float(int(rng.below(9))) * 0.5f - 2.0f;
      const float lse = models::log_sum_exp_row(x.data(), V);
      double ref = 0;
      for (float v : x) ref += std::exp(double(v));
      EXPECT_NEAR(lse, std::log(ref), 1e-5);
      std::vector<int> tok(static_cast<size_t>(k));
      std::vector<float> val(static_cast<size_t>(k));
      models::top_k_row(x.data(), V, lse, k, tok.data(), val.data());
      std::vector<int> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int p, int q) { return x[size_t(p)] > x[size_t(q)]; });
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_EQ(tok[size_t(j)], order[size_t(j)]) << "V " << V << " k " << k << " rank " << j;
        EXPECT_EQ(val[size_t(j)], x[size_t(order[size_t(j)])] - lse);
      }
      // the same log p as log_softmax_rows, bit for bit
      Tensor lp = models::log_softmax_rows(Tensor::from(x, {1, V}));
      for (int64_t j = 0; j < k; ++j) EXPECT_EQ(val[size_t(j)], lp.data()[tok[size_t(j)]]);
    }
}

models::ModelConfig medium() {
  models::ModelConfig c = models::model_config("rnnsearch");
  c.src_vocab = 23;
  c.tgt_vocab = 101;  // not a multiple of the 32-column unit or the vector width
  c.embed = 20;
  models::RnnSearchConfig& r = c.section<models::RnnSearchConfig>();
  r.encoder_hidden = 12;
  r.decoder_hidden = 40;
  r.attention = 24;
  r.readout = 36;
  c.dropout = 0.1;
  return c;
}

// B sources [B, S] of ids in [4, 23) with lengths in [1, S] (into `lengths`)
Tensor random_sources(int64_t B, int64_t S, uint64_t seed, std::vector<int64_t>& lengths) {
  Rng rng(seed);
  Tensor src = Tensor::zeros({B, S});
  for (int64_t b = 0; b < B; ++b) {
    lengths.push_back(1 + int64_t(rng.below(uint64_t(S))));
    for (int64_t j = 0; j < lengths.back(); ++j) src.data()[b * S + j] = float(4 + rng.below(19));
  }
  return src;
}

// The fused decoder against step() on the memory rows it selects: tokens are
// the k best of step()'s log-probabilities, weights and state agree.
TEST(RnnSearchSearchStep, MatchesStepForBothLayouts) {
  NoGradGuard no_grad;
  std::vector<std::vector<float>> by_threads;  // [threads][layout] log-probs, tokens, weights, state
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Rng init(9);
    auto model = models::make_model(medium(), init, 9);
    model->train(false);
    const int64_t B = 3, S = 6, k = 4;
    std::vector<int64_t> lengths = {6, 2, 4};
    Tensor src = Tensor::zeros({B, S});
    Rng rng(10);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < lengths[size_t(b)]; ++j) src.data()[b * S + j] = float(4 + rng.below(19));
    models::Encoded e = model->encode(src, lengths);
    const std::vector<int64_t> rows = {2, 2, 0, 1, 1, 1, 0};  // beams of sentences, any order
    const int64_t N = int64_t(rows.size()), Hd = 40, V = 101;
    models::DecoderState state;
    state.set("s", rand_uniform({N, Hd}, rng, -1, 1));
    std::vector<int> prev;
    Tensor ids = Tensor::empty({N});
    for (int64_t i = 0; i < N; ++i) {
      prev.push_back(int(rng.below(uint64_t(V))));
      ids.data()[i] = float(prev.back());
    }
    models::StepOutput ref = model->step(models::select_rows(e.memory, rows), state, ids, 0);
    std::vector<std::vector<float>> layouts_lp;
    for (int layout = 0; layout < 8; ++layout) {
      // row-major and packed weights, each with the embedding's products folded and per step,
      // and each of those with the context's products folded and per step
      const models::StepLayout packing{layout % 2 == 1, nn::StepWeightType::F32};
      const bool fold = layout % 4 < 2;
      const models::ContextProducts context =
          layout < 4 ? models::ContextProducts::Folded : models::ContextProducts::PerStep;
      // the weights as RnnSearch::decoder() passes them, by parameter name
      auto p = model->named_parameters();
      auto get = [&](const std::string& name) {
        for (auto& [n, t] : p)
          if (n == name) return t;
        ADD_FAILURE() << "no parameter " << name;
        return Tensor();
      };
      models::RnnSearchStepWeights w;
      w.embed = get("tgt_embed.weight"), w.W_a = get("attention.query.weight"), w.v = get("attention.v");
      w.w_ih = get("decoder.weight_ih"), w.w_hh = get("decoder.weight_hh");
      w.b_ih = get("decoder.bias_ih"), w.b_hh = get("decoder.bias_hh");
      w.w_o = get("readout.weight"), w.b_o = get("readout.bias");
      w.w_y = get("output.weight"), w.b_y = get("output.bias");
      auto dec = models::make_rnnsearch_decoder(models::prepare_rnnsearch_decoder(w, packing, fold), e.memory, N,
                                                context);
      dec->report_attention(models::kAttentionMap);
      models::DecoderState st = dec->start(state, N, 1);  // the step updates its own copy in place
      const models::StepTop& out = dec->step(rows, st, prev, k, 0);
      const Tensor s_new = st.live("s"), s_ref = ref.state.live("s");
      ASSERT_EQ(out.k, k);
      attn::testing::expect_top_k_of(out, ref.log_probs, k);
      for (int64_t i = 0; i < N; ++i) {
        for (int64_t j = 0; j < S; ++j)
          EXPECT_NEAR(out.attention.data()[i * S + j], ref.attention.items.at(0).second.data()[i * S + j], 1e-6) << i << "," << j;
        for (int64_t h = 0; h < Hd; ++h)
          EXPECT_NEAR(s_new.data()[i * Hd + h], s_ref.data()[i * Hd + h], 1e-5);
      }
      layouts_lp.push_back(out.log_probs);
      std::vector<float> all = out.log_probs;
      for (int tok : out.tokens) all.push_back(float(tok));
      all.insert(all.end(), out.attention.data(), out.attention.data() + out.attention.numel());
      all.insert(all.end(), s_new.data(), s_new.data() + s_new.numel());
      by_threads.push_back(all);
      const int best3 = out.tokens[size_t(3 * k)];
      const float lp3 = out.log_probs[size_t(3 * k)];
      // a second, smaller step through the same decoder (buffers reused; `out` is overwritten):
      // row 3 alone gives the same result, bit for bit
      models::DecoderState s2 = dec->start(models::select_rows(state, {3}), 1, 1);
      const models::StepTop& o2 = dec->step({1}, s2, {prev[3]}, 1, 0);
      EXPECT_EQ(o2.tokens[0], best3);
      EXPECT_EQ(o2.log_probs[0], lp3);
    }
    for (size_t l = 1; l < layouts_lp.size(); ++l)
      for (size_t i = 0; i < layouts_lp[0].size(); ++i) EXPECT_NEAR(layouts_lp[0][i], layouts_lp[l][i], 1e-5);
  }
  set_num_threads(0);
  // the thread count changes nothing, bit for bit (each layout: 1 thread vs 2 threads)
  ASSERT_EQ(by_threads.size(), 16u);
  for (size_t l = 0; l < 8; ++l) EXPECT_EQ(by_threads[l], by_threads[l + 8]) << "layout " << l;
}

// Searches over enough sentences for the packed layout (>= kPackRows rows):
// beam 1 still equals greedy bit for bit, and beam 3 finds what it finds for
// each sentence alone (row-major layout; equal up to rounding).
TEST(RnnSearchSearchStep, PackedLayoutSearches) {
  Rng init(12);
  models::ModelConfig c = medium();
  auto model = models::make_model(c, init, 12);
  for (auto& [name, p] : model->named_parameters()) {
    if (name == "output.weight")
      for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] *= 6.0f;
    if (name == "output.bias") p.data()[data::SpecialIds{}.eos] += 1.0f;
  }
  model->train(false);
  const int64_t B = 20, S = 7;
  ASSERT_GE(B, models::kPackRows);
  std::vector<int64_t> lengths;
  Tensor src = random_sources(B, S, 13, lengths);
  decode::SearchOptions o;
  o.length_penalty = 0.0;
  auto g = decode::greedy_search(*model, src, lengths, o);
  auto b1 = decode::beam_search(*model, src, lengths, o);
  o.beam = 3;
  auto b3 = decode::beam_search(*model, src, lengths, o);
  int finished = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto &x = g[size_t(b)].hypotheses[0], &y = b1[size_t(b)].hypotheses[0];
    EXPECT_EQ(x.tokens, y.tokens) << b;
    EXPECT_EQ(x.log_prob, y.log_prob) << b;
    EXPECT_EQ(x.attention, y.attention) << b;
    finished += x.finished;
    Tensor one = Tensor::from(std::vector<float>(src.data() + b * S, src.data() + (b + 1) * S), {1, S});
    auto alone = decode::beam_search(*model, one, {lengths[size_t(b)]}, o);
    const auto &p = b3[size_t(b)].hypotheses[0], &q = alone[0].hypotheses[0];
    EXPECT_EQ(p.tokens, q.tokens) << b;
    EXPECT_NEAR(p.log_prob, q.log_prob, 1e-4) << b;
  }
  EXPECT_GT(finished, 0);
}

// Weights prepared once serve many searches: the same hypotheses as searches
// that prepare their own, bit for bit; they are copies, so a later change of
// the parameters does not reach them; weights that do not fit the memory are refused.
TEST(RnnSearchSearchStep, PreparedWeightsServeManySearches) {
  Rng init(14);
  auto model = models::make_model(medium(), init, 14);
  model->train(false);
  const int64_t B = 18, S = 6;
  std::vector<int64_t> lengths;
  Tensor src = random_sources(B, S, 15, lengths);
  for (int beam : {1, 3}) {
    decode::SearchOptions own;
    own.beam = beam;
    decode::SearchOptions shared = own;
    shared.prepared = model->prepare_decoder(B * beam);
    auto want = decode::search(*model, src, lengths, own);
    for (int rep = 0; rep < 2; ++rep) {
      auto got = decode::search(*model, src, lengths, shared);
      for (int64_t b = 0; b < B; ++b) {
        EXPECT_EQ(got[size_t(b)].hypotheses[0].tokens, want[size_t(b)].hypotheses[0].tokens) << b;
        EXPECT_EQ(got[size_t(b)].hypotheses[0].log_prob, want[size_t(b)].hypotheses[0].log_prob) << b;
        EXPECT_EQ(got[size_t(b)].hypotheses[0].attention, want[size_t(b)].hypotheses[0].attention) << b;
      }
    }
    if (beam == 1) {
      // the prepared copies keep the old parameters; a fresh search sees the new ones
      for (auto& [name, p] : model->named_parameters())
        if (name == "output.bias") p.data()[7] += 50.0f;
      auto stale = decode::search(*model, src, lengths, shared);
      auto fresh = decode::search(*model, src, lengths, own);
      EXPECT_EQ(stale[0].hypotheses[0].tokens, want[0].hypotheses[0].tokens);
      ASSERT_FALSE(fresh[0].hypotheses[0].tokens.empty());
      EXPECT_EQ(fresh[0].hypotheses[0].tokens[0], 7);
      for (auto& [name, p] : model->named_parameters())
        if (name == "output.bias") p.data()[7] -= 50.0f;
    }
  }
  models::ModelConfig other = medium();
  other.section<models::RnnSearchConfig>().attention = 16;  // its keys are 16 wide, this memory's 24
  Rng init2(16);
  auto model2 = models::make_model(other, init2, 16);
  model2->train(false);
  NoGradGuard no_grad;
  models::Encoded e = model->encode(src, lengths);
  EXPECT_THROW(model->decoder(e.memory, B, model2->prepare_decoder(B)), std::invalid_argument);
}

TEST(RnnSearchSearchStep, RejectsBadInput) {
  NoGradGuard no_grad;
  Rng init(11);
  auto model = models::make_model(medium(), init, 11);
  model->train(false);
  Tensor src = Tensor::full({2, 3}, 5.0f);
  models::Encoded e = model->encode(src, {3, 2});
  auto dec = model->decoder(e.memory, 4);
  models::DecoderState s;
  s.set("s", Tensor::zeros({2, 40}));
  // each range from both sides: the last value inside accepted, one past it (either end) refused
  EXPECT_THROW(dec->step({0, 2}, s, {1, 1}, 1, 0), std::invalid_argument);    // sentence 2 of 2
  EXPECT_THROW(dec->step({-1, 1}, s, {1, 1}, 1, 0), std::invalid_argument);   // sentence -1
  EXPECT_NO_THROW(dec->step({1, 1}, s, {1, 1}, 3, 0));                        // sentence B - 1
  EXPECT_THROW(dec->step({0, 1}, s, {1, 101}, 1, 0), std::invalid_argument);  // token V
  EXPECT_THROW(dec->step({0, 1}, s, {-1, 1}, 1, 0), std::invalid_argument);   // token -1
  EXPECT_NO_THROW(dec->step({0, 1}, s, {0, 100}, 1, 0));                      // tokens 0 and V - 1
  EXPECT_THROW(dec->step({0, 1}, s, {1, 1}, 102, 0), std::invalid_argument);  // k = V + 1
  EXPECT_THROW(dec->step({0, 1}, s, {1, 1}, 0, 0), std::invalid_argument);    // k = 0
  EXPECT_EQ(dec->step({0, 1}, s, {1, 1}, 101, 0).tokens.size(), 2u * 101u);   // k = V: every token
  EXPECT_THROW(dec->step({0}, s, {1}, 1, 0), std::invalid_argument);          // state rows != rows
  // the memory's source lengths: [0, S]
  for (float bad : {4.0f, -1.0f, 1.5f}) {
    models::EncoderMemory m = e.memory;
    m.lengths() = Tensor::from({3.0f, bad}, {2});
    EXPECT_THROW(model->decoder(m, 4), std::invalid_argument) << "length " << bad;
  }
  for (float fine : {3.0f, 0.0f}) {
    models::EncoderMemory m = e.memory;
    m.lengths() = Tensor::from({3.0f, fine}, {2});
    EXPECT_NO_THROW(model->decoder(m, 4)) << "length " << fine;
  }
  model->train(true);
  EXPECT_THROW(model->decoder(e.memory, 4), std::logic_error);
}


// Without autograd the encoder runs its two directions side by side (one thread
// each); it computes exactly what the sequential encoder computes.
TEST(RnnSearchSearchStep, SideBySideEncoderEqualsSequential) {
  set_num_threads(2);
  Rng init(14);
  auto model = models::make_model(medium(), init, 14);
  model->train(false);
  Rng rng(15);
  const int64_t B = 5, S = 9;
  Tensor src = Tensor::zeros({B, S});
  std::vector<int64_t> lengths;
  for (int64_t b = 0; b < B; ++b) {
    lengths.push_back(1 + int64_t(rng.below(uint64_t(S))));
    for (int64_t j = 0; j < lengths.back(); ++j) src.data()[b * S + j] = float(4 + rng.below(19));
  }
  models::Encoded seq = model->encode(src, lengths);  // grad mode on: sequential (and recorded)
  models::Encoded side;
  {
    NoGradGuard no_grad;
    side = model->encode(src, lengths);
  }
  EXPECT_EQ(seq.memory.values().to_vector(), side.memory.values().to_vector());
  EXPECT_EQ(seq.memory.keys().to_vector(), side.memory.keys().to_vector());
  EXPECT_EQ(seq.state.live("s").to_vector(), side.state.live("s").to_vector());
  set_num_threads(0);
}

}  // namespace
