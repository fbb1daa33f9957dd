// model.type: transformer (models/transformer/): its config section, the
// teacher-forced features against the reference step, and the cached search
// decoder (transformer_search.h) against recomputation, as
// test_decoder_state.cpp holds its toy kind:
//   (a) a cached step equals step(), which recomputes the whole prefix (float tolerance);
//   (b) beam 1 equals greedy;
//   (c) a beam search whose cache the gathers reorder equals a reference beam
//       search (reference_beam.h) that recomputes every hypothesis' prefix.
// Plus the inverse-square-root warm-up of the trainer's schedule.
//
// Legend: B sentences, S source length, N decoder rows, T steps, V vocabulary, E model size.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/decode/search.h"
#include "attn/models/kinds.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer/transformer_config.h"
#include "attn/tensor/random.h"
#include "attn/nn/load_params.h"
#include "attn/nn/step_weight_types.h"
#include "attn/train/average.h"
#include "attn/train/schedule.h"
#include "compare.h"
#include "oracle.h"
#include "reference_beam.h"

namespace attn::testing::transformer_test {
namespace {

constexpr int64_t kVocab = 23;

std::string config_json(const std::string& extra) {
  return R"({"type": "transformer", "src_vocab": 23, "tgt_vocab": 23, "embed": 16, "heads": 4, "feed_forward": 24,
             "encoder_layers": 2, "decoder_layers": 2, "max_positions": 40, "dropout": 0.1,
             "attention_dropout": 0.1)" + extra + "}";
}

std::unique_ptr<models::Seq2SeqModel> make(const std::string& extra = "", uint64_t seed = 4) {
  Rng init(seed);
  auto m = models::make_model(models::model_config_from_json(config_json(extra)), init, 1);
  m->train(false);
  return m;
}

using Batch = SourceBatch;
Batch batch() { return random_source_batch({7, 3, 5, 1}, 7, 4, kVocab, 9); }

// The variants every decoding test runs: pre- and post-norm, sinusoids and learned positions, tied or not.
const std::vector<std::string> kVariants = {
    "", R"(, "norm": "post", "activation": "gelu")", R"(, "positions": "learned", "tied_embeddings": "all")",
    R"(, "tied_embeddings": "decoder", "decoder_layers": 3)"};

TEST(Transformer, ConfigRoundTripsAndNamesTheFieldItRefuses) {
  const models::ModelConfig c = models::model_config_from_json(config_json(R"(, "norm": "post", "positions": "learned")"));
  const std::string json = models::to_json(c);
  EXPECT_EQ(models::to_json(models::model_config_from_json(json)), json);
  EXPECT_NE(json.find(R"("norm":"post")"), std::string::npos) << json;
  const auto& s = c.section<models::TransformerConfig>();
  EXPECT_EQ(s.heads, 4);
  EXPECT_EQ(s.positions, models::TransformerPositions::Learned);
  auto refused = [](const std::string& extra, const std::string& field) {
    try {
      models::validate(models::model_config_from_json(config_json(extra)));
      ADD_FAILURE() << extra << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refused(R"(, "heads": 5)", "heads");
  refused(R"(, "decoder_layers": 0)", "decoder_layers");
  refused(R"(, "feed_forward": -1)", "feed_forward");
  refused(R"(, "attention_dropout": 1.0)", "attention_dropout");
  refused(R"(, "max_positions": 1)", "max_positions");
  EXPECT_THROW(models::model_config_from_json(config_json(R"(, "activation": "tanh")")), std::invalid_argument);
  EXPECT_THROW(models::model_config_from_json(config_json(R"(, "cell": "gru")")), std::invalid_argument);  // not its key
}

TEST(Transformer, AttentionMapsNameEveryLayerAndHeadDefaultLastMean) {
  const auto m = make();
  const std::vector<std::string> maps = m->attention_maps();
  ASSERT_EQ(maps.size(), size_t(2 * (4 + 1)));
  EXPECT_EQ(maps.front(), "cross.layer2.mean");
  EXPECT_EQ(models::resolve_attention_map(*m, ""), "cross.layer2.mean");
  EXPECT_EQ(models::resolve_attention_map(*m, "cross.layer1.head3"), "cross.layer1.head3");
  EXPECT_THROW(models::resolve_attention_map(*m, "cross.layer3.head1"), std::invalid_argument);
}

// Teacher forcing over all positions at once equals the reference step at each position.
TEST(Transformer, ForcedFeaturesEqualTheReferenceSteps) {
  for (const std::string& v : kVariants) {
    SCOPED_TRACE(v);
    const auto m = make(v);
    NoGradGuard no_grad;
    const Batch src = batch();
    data::Seq2SeqBatch b;
    b.src = src.src, b.src_lengths = src.lengths;
    const int64_t B = 4, T = 5;
    b.tgt_in = Tensor::zeros({B, T});
    Rng rng(2);
    for (int64_t i = 0; i < B; ++i) {
      b.tgt_in.data()[i * T] = 1;  // BOS
      for (int64_t t = 1; t < T; ++t) b.tgt_in.data()[i * T + t] = float(4 + rng.below(kVocab - 4));
    }
    const Tensor logp = log_softmax(m->forced_logits(b), -1);  // [T * B, V]
    models::Encoded e = m->encode(b.src, b.src_lengths);
    models::DecoderState st = e.state;
    for (int64_t t = 0; t < T; ++t) {
      Tensor prev = Tensor::empty({B});
      for (int64_t i = 0; i < B; ++i) prev.data()[i] = b.tgt_in.data()[i * T + t];
      models::StepOutput o = m->step(e.memory, st, prev, t);
      for (int64_t i = 0; i < B * kVocab; ++i)
        ASSERT_NEAR(o.log_probs.data()[i], logp.data()[t * B * kVocab + i], 2e-5) << "t " << t << " at " << i;
      st = o.state;
    }
  }
}

// Runs m's search decoder (reporting `map`, "" for its default) and step()'s
// recomputation side by side for T steps over decoder rows `rows` of batch b:
// every log-probability (sorted, within 2e-5) and the reported map agree; the
// next tokens are random. Returns the decoder's final state.
models::DecoderState expect_cached_equals_recomputed(const models::Seq2SeqModel& m, const Batch& b,
                                                     const std::vector<int64_t>& rows, int64_t T,
                                                     const std::string& map) {
  NoGradGuard no_grad;
  models::Encoded e = m.encode(b.src, b.lengths);
  const int64_t N = int64_t(rows.size()), S = b.src.size(1), V = m.config().tgt_vocab;
  auto dec = m.decoder(e.memory, N, nullptr);
  const std::string name = models::resolve_attention_map(m, map);
  dec->report_attention(name);
  models::DecoderState cached = dec->start(models::select_rows(e.state, rows), N, T);
  models::DecoderState full = models::select_rows(e.state, rows);
  const models::EncoderMemory per_row = models::select_rows(e.memory, rows);
  Rng rng(5);
  std::vector<int> prev(size_t(N), m.config().specials.bos);
  for (int64_t t = 0; t < T; ++t) {
    Tensor ids = Tensor::empty({N});
    for (int64_t i = 0; i < N; ++i) ids.data()[i] = float(prev[size_t(i)]);
    models::StepOutput ref = m.step(per_row, full, ids, t);
    const models::StepTop& out = dec->step(rows, cached, prev, V, t);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < V; ++j) {
        const int tok = out.tokens[size_t(i * V + j)];
        EXPECT_NEAR(out.log_probs[size_t(i * V + j)], ref.log_probs.data()[i * V + tok], 2e-5)
            << "step " << t << " row " << i;
        if (j > 0) EXPECT_GE(out.log_probs[size_t(i * V + j - 1)], out.log_probs[size_t(i * V + j)]);
      }
    const Tensor* want = ref.attention.find(name);
    EXPECT_TRUE(want && out.attention.defined() && out.attention.shape() == Shape({N, S})) << "step " << t;
    if (want && out.attention.defined() && out.attention.shape() == Shape({N, S}))
      for (int64_t i = 0; i < N * S; ++i) EXPECT_NEAR(out.attention.data()[i], want->data()[i], 1e-5) << "step " << t;
    full = ref.state;
    for (int& p : prev) p = int(4 + rng.below(uint64_t(V - 4)));
  }
  EXPECT_THROW(dec->step(rows, cached, prev, 1, T), std::invalid_argument);  // the cache holds T positions
  return cached;
}

// (a) one step at a time, rows in any order (beams of sentences), against step()'s recomputation.
TEST(Transformer, CachedStepEqualsRecomputedPrefix) {
  for (const std::string& v : kVariants)
    for (const std::string map : {"", "cross.layer1.head3", "cross.layer1.mean"}) {
      SCOPED_TRACE(v + " map " + map);
      (void)expect_cached_equals_recomputed(*make(v), batch(), {2, 2, 0, 3, 1, 1, 0}, 6, map);
    }
}

// (a'') a model large enough that the step runs on every thread
// (transformer_search.cpp): with few rows the products split their column
// units across the threads, with many each thread keeps its rows through
// every phase; both against step()'s recomputation, pre- and post-norm, and in
// int8 / bf16 both splits give a sentence's row the same numbers
TEST(Transformer, CachedStepEqualsRecomputedPrefixOnEveryThread) {
  for (const std::string norm : {"pre", "post"}) {
    Rng init(6);
    auto m = models::make_model(models::model_config_from_json(
                                    R"({"type": "transformer", "src_vocab": 200, "tgt_vocab": 200, "embed": 64,
                                        "heads": 4, "feed_forward": 96, "encoder_layers": 1, "decoder_layers": 2,
                                        "max_positions": 40, "norm": ")" + norm + R"("})"),
                                init, 1);
    m->train(false);
    const Batch b = random_source_batch({7, 3, 5, 1, 6}, 7, 4, 200, 9);
    std::vector<int64_t> few, many;  // 14 rows (units split on 2 threads), 30 (rows kept)
    for (int64_t i = 0; i < 14; ++i) few.push_back(i % 5);
    for (int64_t i = 0; i < 30; ++i) many.push_back((i * 3) % 5);
    for (const auto* rows : {&few, &many}) {
      SCOPED_TRACE(norm + "-norm, rows " + std::to_string(rows->size()));
      (void)expect_cached_equals_recomputed(*m, b, *rows, 5, "cross.layer2.mean");
    }
    // int8 / bf16: a row's numbers do not depend on the split (activations are
    // quantised per row), so a sentence's row in the 30-row search (rows kept
    // per thread, each thread converting its own rows) equals its row in the
    // 14-row one (column units split, the rows converted by both threads)
    for (nn::StepWeightType type : {nn::StepWeightType::I8, nn::StepWeightType::BF16}) {
      SCOPED_TRACE(norm + "-norm, type " + std::to_string(int(type)));
      NoGradGuard no_grad;
      const auto prepared = m->prepare_decoder(30, type);
      const models::Encoded e = m->encode_for_search(b.src, b.lengths, prepared.get());
      std::vector<std::vector<int64_t>> searched = {few, many};
      std::vector<std::unique_ptr<models::StepDecoder>> decs;
      std::vector<models::DecoderState> states;
      for (const auto& rows : searched) {
        decs.push_back(m->decoder(e.memory, 30, prepared));
        states.push_back(decs.back()->start(models::select_rows(e.state, rows), int64_t(rows.size()), 4));
      }
      for (int64_t t = 0; t < 4; ++t) {
        std::vector<std::vector<std::pair<int, float>>> best(2);  // per search and row: the top token
        for (size_t s = 0; s < 2; ++s) {
          std::vector<int> prev;
          for (int64_t r : searched[s]) prev.push_back(t == 0 ? 1 : int(4 + (r * 37 + t * 11) % 196));
          const models::StepTop& out = decs[s]->step(searched[s], states[s], prev, 1, t);
          for (size_t i = 0; i < searched[s].size(); ++i) best[s].push_back({out.tokens[i], out.log_probs[i]});
        }
        for (size_t i = 0; i < many.size(); ++i)
          for (size_t j = 0; j < few.size(); ++j)
            if (many[i] == few[j]) {
              EXPECT_EQ(best[1][i].first, best[0][j].first) << "step " << t << " sentence " << many[i];
              EXPECT_NEAR(best[1][i].second, best[0][j].second, 1e-5) << "step " << t << " sentence " << many[i];
            }
      }
    }
  }
}

// (a') past the cache's first size (64 positions): the cache doubles and keeps every position
TEST(Transformer, CachedStepEqualsRecomputedPrefixAsTheCacheGrows) {
  const auto m = make(R"(, "max_positions": 100, "dropout": 0.0, "attention_dropout": 0.0)");
  const models::DecoderState last = expect_cached_equals_recomputed(*m, batch(), {1, 0, 2}, 70, "");
  // 70 steps are past the first 64 positions (transformer_search.cpp's kFirstCacheSteps): it grew
  EXPECT_GE(last.buffer("self_k.0").size(0), 70);  // [T', M, E]
  EXPECT_GE(last.buffer("self_slot").size(1), 70);
}

// (a'') int8 / bf16 searches encode on the prepared weights (transformer_encode.cpp):
// the memory (values, every layer's cross keys and values) near the fp32
// encoder's, zeros past each length; fp32 searches keep encode() itself.
TEST(Transformer, PreparedEncoderInInt8AndBf16IsNearTheEncoder) {
  NoGradGuard no_grad;
  for (const std::string& v : kVariants) {
    SCOPED_TRACE(v);
    const auto m = make(v);
    const Batch b = batch();
    const models::Encoded want = m->encode(b.src, b.lengths);
    const models::Encoded same = m->encode_for_search(b.src, b.lengths, m->prepare_decoder(4, nn::StepWeightType::F32).get());
    for (const auto& [name, t] : want.memory.all()) EXPECT_EQ(same.memory.get(name).to_vector(), t.to_vector()) << name;
    for (auto [type, tol] : {std::pair{nn::StepWeightType::I8, 0.05}, std::pair{nn::StepWeightType::BF16, 0.02}}) {
      const models::Encoded got = m->encode_for_search(b.src, b.lengths, m->prepare_decoder(4, type).get());
      ASSERT_EQ(got.memory.all().size(), want.memory.all().size());
      for (const auto& [name, t] : want.memory.all()) {
        const std::vector<float> w = t.to_vector(), g = got.memory.get(name).to_vector();
        ASSERT_EQ(g.size(), w.size()) << name;
        double scale = 0, gap = 0;
        for (size_t i = 0; i < w.size(); ++i) scale = std::max(scale, std::fabs(double(w[i])));
        for (size_t i = 0; i < w.size(); ++i) gap = std::max(gap, std::fabs(double(g[i]) - double(w[i])));
        EXPECT_LE(gap, tol * scale) << name << " type " << int(type);
        if (name != "lengths") EXPECT_GT(gap, 0.0) << name << ": identical values mean the type was not applied";
      }
      const int64_t S = b.src.size(1), E = got.memory.values().size(2);
      for (size_t s = 0; s < b.lengths.size(); ++s)  // padding rows of the values are zeros
        for (int64_t j = b.lengths[s] * E; j < S * E; ++j)
          ASSERT_EQ(got.memory.values().data()[int64_t(s) * S * E + j], 0.0f) << "sentence " << s;
    }
  }
}

decode::SearchOptions options(int beam) {
  decode::SearchOptions o;
  o.beam = beam;
  o.nbest = beam;
  o.max_len_ratio = 0.0, o.max_len_offset = 8;
  o.length_penalty = 0.0;
  return o;
}

void expect_near(const std::vector<decode::Hypothesis>& a, const std::vector<decode::Hypothesis>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t h = 0; h < a.size(); ++h) {
    EXPECT_EQ(a[h].tokens, b[h].tokens) << what << " hypothesis " << h;
    EXPECT_NEAR(a[h].log_prob, b[h].log_prob, 1e-4) << what << " hypothesis " << h;
    EXPECT_EQ(a[h].finished, b[h].finished) << what << " hypothesis " << h;
    ASSERT_EQ(a[h].attention.size(), b[h].attention.size()) << what;
    for (size_t j = 0; j < a[h].attention.size(); ++j) EXPECT_NEAR(a[h].attention[j], b[h].attention[j], 1e-5) << what;
  }
}

// (b) beam 1 equals greedy, exactly (the same decoder).
TEST(Transformer, BeamOneEqualsGreedy) {
  const auto m = make();
  const Batch b = batch();
  const auto greedy = decode::greedy_search(*m, b.src, b.lengths, options(1));
  const auto beam = decode::beam_search(*m, b.src, b.lengths, options(1));
  ASSERT_EQ(greedy.size(), beam.size());
  for (size_t s = 0; s < greedy.size(); ++s) {
    ASSERT_EQ(greedy[s].hypotheses.size(), 1u);
    EXPECT_EQ(greedy[s].hypotheses[0].tokens, beam[s].hypotheses[0].tokens);
    EXPECT_EQ(greedy[s].hypotheses[0].log_prob, beam[s].hypotheses[0].log_prob);
    EXPECT_EQ(greedy[s].hypotheses[0].attention, beam[s].hypotheses[0].attention);
  }
}

// (c) the searches' reordered cache against every hypothesis' prefix recomputed by step().
TEST(Transformer, ReorderedCacheEqualsBeamSearchOverFullPrefixes) {
  for (const std::string& v : {kVariants[0], kVariants[1]}) {
    const auto mp = make(v, 11);
    const models::Seq2SeqModel& m = *mp;
    const Batch b = batch();
    for (int beam : {2, 4}) {
      const decode::SearchOptions o = options(beam);
      const auto got = decode::beam_search(m, b.src, b.lengths, o);
      bool reordered = false;
      for (size_t s = 0; s < got.size(); ++s) {
        NoGradGuard no_grad;
        const int64_t len = b.lengths[s];
        models::Encoded e = m.encode(b.src.narrow0(int64_t(s), 1).clone(), {len});
        auto step = [&](int64_t t, const std::vector<decode::Hypothesis>& live, const std::vector<int64_t>& parents) {
          ReferenceStep r;
          for (size_t i = 0; i < parents.size(); ++i) reordered = reordered || parents[i] != int64_t(i);
          for (const decode::Hypothesis& h : live) {
            std::vector<int> inputs = {m.config().specials.bos};
            inputs.insert(inputs.end(), h.tokens.begin(), h.tokens.end());
            models::DecoderState st = e.state;
            models::StepOutput out;
            for (int64_t j = 0; j <= t; ++j) {
              out = m.step(e.memory, st, Tensor::from({float(inputs[size_t(j)])}, {1}), j);
              st = out.state;
            }
            r.log_probs.insert(r.log_probs.end(), out.log_probs.data(), out.log_probs.data() + kVocab);
            const Tensor& w = *out.attention.find(m.attention_maps().front());
            r.attention.emplace_back(w.data(), w.data() + len);
          }
          return r;
        };
        expect_near(got[s].hypotheses, reference_beam(kVocab, m.config().specials.eos, o.max_len_offset, o, step),
                    v + " beam " + std::to_string(beam) + " sentence " + std::to_string(s));
      }
      EXPECT_TRUE(reordered) << "no hypothesis changed rows: the test would not see a wrong gather";
    }
  }
}

// Training mode: the loss is finite and every parameter gets a gradient.
TEST(Transformer, LossReachesEveryParameter) {
  Rng init(3);
  auto m = models::make_model(models::model_config_from_json(config_json(R"(, "positions": "learned")")), init, 1);
  m->train(true);
  const Batch src = batch();
  data::Seq2SeqBatch b;
  b.src = src.src, b.src_lengths = src.lengths;
  b.tgt_in = Tensor::from({1, 5, 6, 7, 1, 8, 9, 0, 1, 10, 0, 0, 1, 11, 12, 13}, {4, 4});
  b.tgt_out = Tensor::from({5, 6, 7, 2, 8, 9, 2, 0, 10, 2, 0, 0, 11, 12, 13, 2}, {4, 4});
  Tensor loss = m->loss(b, {0.1f});
  ASSERT_TRUE(std::isfinite(loss.item()));
  backward(loss);
  for (const auto& [name, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    double s = 0;
    for (int64_t i = 0; i < p.numel(); ++i) s += std::abs(p.grad().data()[i]);
    if (name.find("positions") == std::string::npos)  // learned positions past the batch's get none
      EXPECT_GT(s, 0.0) << name;
  }
}

// The whole model against PyTorch with the same weights (tests/oracle/transformer_model.py):
// the loss (label smoothing 0.1) and every parameter's gradient on one padded batch.
TEST(Transformer, LossAndEveryGradientMatchTorch) {
  for (const char* norm : {"pre", "post"})
    for (const char* tied : {"all", "none"}) {
      SCOPED_TRACE(std::string(norm) + " " + tied);
      SafetensorsFile f = run_oracle("transformer_model.py", std::string(norm) + " " + tied);
      const std::string c = R"({"type": "transformer", "src_vocab": 29, "tgt_vocab": 29, "embed": 16, "heads": 4,
          "feed_forward": 24, "encoder_layers": 2, "decoder_layers": 2, "max_positions": 64, "dropout": 0.0,
          "attention_dropout": 0.0, "norm": ")" + std::string(norm) + R"(", "tied_embeddings": ")" + tied + "\"}";
      Rng init(1);
      auto m = models::make_model(models::model_config_from_json(c), init, 1);
      m->train(true);
      ASSERT_EQ(load_oracle_params(*m, f), std::stoi(f.metadata.at("count"))) << "every torch parameter has an attn twin";
      ASSERT_EQ(int(m->named_parameters().size()), std::stoi(f.metadata.at("count")));
      data::Seq2SeqBatch b;
      b.src = f.get("src").clone();
      const Tensor len = f.get("src_lengths");
      for (int64_t i = 0; i < len.numel(); ++i) b.src_lengths.push_back(int64_t(len.data()[i]));
      b.tgt_in = f.get("tgt_in").clone();
      b.tgt_out = f.get("tgt_out").clone();
      Tensor loss = m->loss(b, {0.1f});
      EXPECT_NEAR(loss.item(), f.get("loss").data()[0], 1e-5 * std::abs(f.get("loss").data()[0]));
      backward(loss);
      for (const auto& [name, p] : m->named_parameters()) {
        ASSERT_TRUE(p.grad().defined()) << name;
        const double d = max_rel_diff(p.grad(), f.get("g." + name));
        EXPECT_LE(d, 1e-3) << "g." << name;
      }
    }
}

TEST(Transformer, InverseSquareRootWarmup) {
  train::TrainOptions t;
  t.lr = 1e-3, t.warmup_steps = 2000, t.lr_patience = 0;
  const train::Schedule s(t);
  EXPECT_NEAR(*s.scheduled_lr(1), 1e-3 / 2000, 1e-12);
  EXPECT_NEAR(*s.scheduled_lr(1000), 5e-4, 1e-12);
  EXPECT_NEAR(*s.scheduled_lr(2000), 1e-3, 1e-12);
  EXPECT_NEAR(*s.scheduled_lr(8000), 5e-4, 1e-12);
  t.warmup_steps = 0;
  EXPECT_FALSE(train::Schedule(t).scheduled_lr(5).has_value());
}

TEST(Transformer, WarmupThenLinearDecayToZero) {
  train::TrainOptions t;
  t.lr = 1e-3, t.warmup_steps = 500, t.decay_steps = 2500, t.lr_patience = 0;
  const train::Schedule s(t);
  EXPECT_NEAR(*s.scheduled_lr(250), 5e-4, 1e-12);
  EXPECT_NEAR(*s.scheduled_lr(500), 1e-3, 1e-12);
  EXPECT_NEAR(*s.scheduled_lr(1500), 5e-4, 1e-12);
  EXPECT_NEAR(*s.scheduled_lr(2000), 2.5e-4, 1e-12);
  EXPECT_EQ(*s.scheduled_lr(2500), 0.0);
  EXPECT_EQ(*s.scheduled_lr(4000), 0.0);
  // The config refuses a decay that does not follow a warm-up, naming the key.
  const std::string base =
      "data: {train_src: a, train_tgt: b, valid_src: c, valid_tgt: d}\ntrain: {out_dir: /tmp/x, lr_patience: 0, ";
  EXPECT_NO_THROW(train::parse_train_config(base + "warmup_steps: 500, decay_steps: 2500}"));
  for (const char* bad : {"warmup_steps: 0, decay_steps: 2500}", "warmup_steps: 500, decay_steps: 500}"}) {
    try {
      train::parse_train_config(base + bad);
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("train.decay_steps"), std::string::npos) << e.what();
    }
  }
}

// `attn average` on a Transformer's files: every tensor (the shared embedding
// table once, the per-layer projections, the norms) is the mean of the two
// models', the result loads into the kind by name and decodes.
TEST(Transformer, AveragedFilesLoadAndDecode) {
  const std::string extra = R"(, "tied_embeddings": "all")";
  const auto a = make(extra, 4), b = make(extra, 5), avg = make(extra, 6);
  const auto dir = std::filesystem::temp_directory_path() / ("attn_transformer_avg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  for (const auto* m : {a.get(), b.get()}) {
    files.push_back((dir / ("m" + std::to_string(files.size()) + ".safetensors")).string());
    save_safetensors(files.back(), m->named_parameters(), {{"config", models::to_json(m->config())}});
  }
  const SafetensorsFile mean = train::average_model_files(files);
  nn::load_into_params(mean, avg->named_parameters());
  const auto pa = a->named_parameters(), pb = b->named_parameters(), pm = avg->named_parameters();
  ASSERT_EQ(pa.size(), pm.size());
  for (size_t i = 0; i < pa.size(); ++i)
    for (int64_t k = 0; k < pa[i].second.numel(); k += 7)
      ASSERT_NEAR(pm[i].second.data()[k], 0.5f * (pa[i].second.data()[k] + pb[i].second.data()[k]), 1e-6f)
          << pa[i].first;
  const Batch x = batch();
  for (const auto& r : decode::beam_search(*avg, x.src, x.lengths, options(3)))
    EXPECT_TRUE(std::isfinite(r.hypotheses[0].log_prob));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attn::testing::transformer_test
