// The decoder state contract (models/decoder_state.h, seq2seq.h) admits a model
// kind with a growing per-layer cache, defined here and nowhere else: one
// causal self-attention layer over the decoder's own previous inputs, whose
// keys and values a search caches ([max_rows, max_steps, D], position t
// written at step t), plus cross-attention over the encoder's named tensors.
// It is registered in the table of kinds (models/kinds.h) as
// "test_cached_attention" and built by make_model from a config JSON naming
// that type; its own StepDecoder runs through the real greedy_search / beam_search:
//   (a) the cached step equals step(), which recomputes the whole prefix;
//   (b) beam 1 equals greedy;
//   (c) beam search, whose gathers reorder the cache, equals a reference beam
//       search that keeps every hypothesis' full prefix and recomputes it.
// All exact: both paths run the same float code on the same inputs.
//
// Legend: B sentences, S source length, N decoder rows, M = max_rows,
// T = max_steps, D model size, V target vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/decode/search.h"
#include "attn/models/kinds.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/random.h"
#include "reference_beam.h"

namespace attn::testing::decoder_state_test {
namespace {

constexpr int64_t kD = 6, kSrcVocab = 9, kVocab = 12;
constexpr int64_t kPrefix = 16;  // step()'s prefix buffer: at most this many steps

// The whole model's arithmetic, shared by the cached step and the recomputing
// one (so that equal inputs give equal bits).
struct Weights {
  std::vector<float> src_embed, tgt_embed;  // [kSrcVocab, D], [V, D]
  std::vector<float> wq, wk, wv;            // [D, D] self-attention
  std::vector<float> wck, wcv;              // [D, D] cross-attention's key and value projections
  std::vector<float> out_w, out_b;          // [V, D], [V]

  explicit Weights(uint64_t seed) {
    Rng rng(seed);
    auto draw = [&](int64_t n, float scale) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = rng.uniform(-scale, scale);
      return v;
    };
    src_embed = draw(kSrcVocab * kD, 1.0f), tgt_embed = draw(kVocab * kD, 1.0f);
    wq = draw(kD * kD, 0.8f), wk = draw(kD * kD, 0.8f), wv = draw(kD * kD, 0.8f);
    wck = draw(kD * kD, 0.8f), wcv = draw(kD * kD, 0.8f);
    out_w = draw(kVocab * kD, 0.7f), out_b = draw(kVocab, 0.3f);
  }

  // y [D] = W [D, D] x [D]
  static void project(const std::vector<float>& w, const float* x, float* y) {
    for (int64_t r = 0; r < kD; ++r) {
      float acc = 0;
      for (int64_t c = 0; c < kD; ++c) acc += w[size_t(r * kD + c)] * x[c];
      y[r] = acc;
    }
  }

  // x [D] = embed[token] + a position signal (so the step number matters)
  static void input(const std::vector<float>& embed, int64_t token, int64_t pos, float* x) {
    for (int64_t d = 0; d < kD; ++d) x[d] = embed[size_t(token * kD + d)] + std::sin(float((pos + 1) * (d + 1)) * 0.37f);
  }

  // The target position t's k and v [D] (what the cache keeps).
  void self_kv(int64_t token, int64_t t, float* k, float* v) const {
    float x[kD];
    input(tgt_embed, token, t, x);
    project(wk, x, k);
    project(wv, x, v);
  }

  // Position t's output: self-attention of its query over keys / values [t + 1, D]
  // (positions 0..t), then cross-attention over one sentence's keys / values
  // [S, D] (its first len), -> log p [V] and the cross-attention weights [S].
  void output(int64_t token, int64_t t, const float* keys, const float* values, const float* mk, const float* mv,
              int64_t len, int64_t S, float* log_probs, float* weights) const {
    float x[kD], q[kD], h[kD], c[kD] = {0};
    input(tgt_embed, token, t, x);
    project(wq, x, q);
    std::vector<float> a(size_t(t + 1));
    float mx = -INFINITY;
    for (int64_t j = 0; j <= t; ++j) {
      float s = 0;
      for (int64_t d = 0; d < kD; ++d) s += q[d] * keys[j * kD + d];
      a[size_t(j)] = s / std::sqrt(float(kD));
      mx = std::max(mx, a[size_t(j)]);
    }
    float z = 0;
    for (float& e : a) z += (e = std::exp(e - mx));
    for (int64_t d = 0; d < kD; ++d) {
      h[d] = x[d];
      for (int64_t j = 0; j <= t; ++j) h[d] += a[size_t(j)] / z * values[j * kD + d];
    }
    mx = -INFINITY;
    for (int64_t j = 0; j < S; ++j) weights[j] = 0;
    for (int64_t j = 0; j < len; ++j) {
      float s = 0;
      for (int64_t d = 0; d < kD; ++d) s += h[d] * mk[j * kD + d];
      weights[j] = s;
      mx = std::max(mx, s);
    }
    z = 0;
    for (int64_t j = 0; j < len; ++j) z += (weights[j] = std::exp(weights[j] - mx));
    for (int64_t j = 0; j < len; ++j) {
      weights[j] /= z;
      for (int64_t d = 0; d < kD; ++d) c[d] += weights[j] * mv[j * kD + d];
    }
    mx = -INFINITY;
    for (int64_t v = 0; v < kVocab; ++v) {
      float s = out_b[size_t(v)];
      for (int64_t d = 0; d < kD; ++d) s += out_w[size_t(v * kD + d)] * (h[d] + c[d]);
      log_probs[v] = s;
      mx = std::max(mx, s);
    }
    z = 0;
    for (int64_t v = 0; v < kVocab; ++v) z += std::exp(log_probs[v] - mx);
    for (int64_t v = 0; v < kVocab; ++v) log_probs[v] -= mx + std::log(z);
  }
};

// The k best tokens of log p [V], as StepTop orders them (descending, ties by lower id).
void top_k(const float* lp, int64_t k, int* tokens, float* out) {
  std::vector<int> ids(static_cast<size_t>(kVocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return lp[a] > lp[b]; });
  for (int64_t j = 0; j < k; ++j) tokens[j] = ids[size_t(j)], out[j] = lp[ids[size_t(j)]];
}

// The decoder the model kind brings: its state is the cache only,
// "self_keys_0" and "self_values_0" [M, T, D]; rows read the memory through
// the row -> sentence map.
// What the searches asked of the decoder, for the tests to read.
struct Sizes {
  int64_t max_rows = 0, max_steps = 0;  // start()'s arguments
  int64_t most_rows = 0;                // the most rows a step saw
};

class CachedDecoder final : public models::StepDecoder {
public:
  CachedDecoder(const Weights& w, const models::EncoderMemory& m, Sizes& sizes) : w_(w), memory_(m), sizes_(sizes) {}

  models::DecoderState start(const models::DecoderState& initial, int64_t max_rows, int64_t max_steps) override {
    sizes_ = {max_rows, max_steps, 0};
    models::DecoderState s(initial.rows(), max_rows);
    s.add("self_keys_0", {max_steps, kD});
    s.add("self_values_0", {max_steps, kD});
    return s;
  }

  const models::StepTop& step(const std::vector<int64_t>& rows, models::DecoderState& state,
                              const std::vector<int>& prev, int64_t k, int64_t t) override {
    const int64_t N = int64_t(rows.size()), T = state.buffer("self_keys_0").size(1);
    if (state.rows() != N || int64_t(prev.size()) != N || t < 0 || t >= T)
      throw std::invalid_argument("cached decoder: step " + std::to_string(t) + " of " + std::to_string(T));
    const Tensor &mk = memory_.get("cross_keys_0"), &mv = memory_.get("cross_values_0");
    const int64_t S = mk.size(1);
    float *keys = state.data("self_keys_0"), *values = state.data("self_values_0");
    out_.k = k;
    out_.tokens.resize(size_t(N * k));
    out_.log_probs.resize(size_t(N * k));
    weights_ = Tensor::empty({N, S});  // the context needs them; out_ reports them when asked
    std::vector<float> lp(static_cast<size_t>(kVocab));
    for (int64_t i = 0; i < N; ++i) {
      const int64_t b = rows[size_t(i)], len = int64_t(memory_.lengths().data()[b]);
      float* ki = keys + i * T * kD;
      float* vi = values + i * T * kD;
      w_.self_kv(prev[size_t(i)], t, ki + t * kD, vi + t * kD);  // position t appended in place
      w_.output(prev[size_t(i)], t, ki, vi, mk.data() + b * S * kD, mv.data() + b * S * kD, len, S, lp.data(),
                weights_.data() + i * S);
      top_k(lp.data(), k, out_.tokens.data() + i * k, out_.log_probs.data() + i * k);
    }
    sizes_.most_rows = std::max(sizes_.most_rows, N);
    out_.attention = attention_map_.empty() ? Tensor() : weights_;
    return out_;
  }

private:
  const Weights& w_;
  models::EncoderMemory memory_;
  Sizes& sizes_;
  models::StepTop out_;
  Tensor weights_;  // [N, S]
};

// The kind's config section: {"type": "test_cached_attention", "cached": true | false, ...}.
struct CachedAttentionConfig : models::KindConfig {
  bool cached = true;  // searches run the cached decoder (false: the default decoder over step())
  std::unique_ptr<models::KindConfig> clone() const override { return std::make_unique<CachedAttentionConfig>(*this); }
};

// The model kind. step() is the reference: its state is the prefix of input
// tokens ("prefix" [N, kPrefix], position t written at step t), and it
// recomputes every position's keys and values from it. With cached = false
// the searches run it through the default decoder (seq2seq.cpp).
class CachedAttentionModel : public models::Seq2SeqModel {
public:
  explicit CachedAttentionModel(const models::ModelConfig& c)
      : Seq2SeqModel(c, 0), w_(7), cached_(c.section<CachedAttentionConfig>().cached) {
    train(false);
  }

  // src [B, S] ids -> memory {cross_keys_0, cross_values_0 [B, S, D], lengths [B]}, state {prefix [B, kPrefix]}
  models::Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override {
    const int64_t B = src.size(0), S = src.size(1);
    models::Encoded e;
    Tensor mk = Tensor::zeros({B, S, kD}), mv = Tensor::zeros({B, S, kD});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < lengths[size_t(b)]; ++j) {
        float x[kD];
        Weights::input(w_.src_embed, int64_t(src.data()[b * S + j]), j, x);
        Weights::project(w_.wck, x, mk.data() + (b * S + j) * kD);
        Weights::project(w_.wcv, x, mv.data() + (b * S + j) * kD);
      }
    e.memory["cross_keys_0"] = mk;
    e.memory["cross_values_0"] = mv;
    e.memory.lengths() = Tensor::empty({B});
    for (int64_t b = 0; b < B; ++b) e.memory.lengths().data()[b] = float(lengths[size_t(b)]);
    e.state.set("prefix", Tensor::zeros({B, kPrefix}));
    return e;
  }

  models::StepOutput step(const models::EncoderMemory& memory, const models::DecoderState& state, const Tensor& prev,
                          int64_t t, models::StepDetail = models::StepDetail::Weights) const override {
    const int64_t N = prev.size(0);
    const Tensor &mk = memory.get("cross_keys_0"), &mv = memory.get("cross_values_0");
    const int64_t S = mk.size(1);
    if (t >= kPrefix) throw std::invalid_argument("step: beyond the prefix buffer");
    models::StepOutput out;
    Tensor prefix = state.live("prefix").clone();
    out.log_probs = Tensor::empty({N, kVocab});
    Tensor weights = Tensor::empty({N, S});
    std::vector<float> keys(size_t((t + 1) * kD)), values(keys.size());
    for (int64_t i = 0; i < N; ++i) {
      prefix.data()[i * kPrefix + t] = prev.data()[i];
      for (int64_t j = 0; j <= t; ++j)  // every position again, no cache
        w_.self_kv(int64_t(prefix.data()[i * kPrefix + j]), j, keys.data() + j * kD, values.data() + j * kD);
      w_.output(int64_t(prev.data()[i]), t, keys.data(), values.data(), mk.data() + i * S * kD,
                mv.data() + i * S * kD, int64_t(memory.lengths().data()[i]), S, out.log_probs.data() + i * kVocab,
                weights.data() + i * S);
    }
    out.attention.add(models::kAttentionMap, weights);
    out.state.set("prefix", prefix);
    return out;
  }

  std::unique_ptr<models::StepDecoder> decoder(const models::EncoderMemory& memory, int64_t max_rows,
                                               std::shared_ptr<const models::PreparedDecoder> prepared) const override {
    if (!cached_) return Seq2SeqModel::decoder(memory, max_rows, prepared);
    return std::make_unique<CachedDecoder>(w_, memory, sizes);
  }

  Tensor forced_features(const data::Seq2SeqBatch&) const override { throw std::logic_error("not trained"); }
  OutputLayer output_layer() const override { throw std::logic_error("not trained"); }

  mutable Sizes sizes;  // the last search's

private:
  Weights w_;
  bool cached_;
};

// The kind's row of the table, added once per process.
void register_cached_attention_kind() {
  static const bool registered = [] {
    models::ModelKind k;
    k.name = "test_cached_attention";
    k.read = [](config::ObjectReader& r, const nlohmann::json&, models::ModelConfig& c) {
      auto s = std::make_unique<CachedAttentionConfig>();
      s->cached = r.get_bool("cached", s->cached);
      c.kind = models::KindSection(std::move(s));
    };
    k.write = [](const models::ModelConfig& c, nlohmann::ordered_json& j) {
      j["cached"] = c.section<CachedAttentionConfig>().cached;
    };
    k.validate = [](const models::ModelConfig& c) { (void)c.section<CachedAttentionConfig>(); };
    k.min_parameter_count = [](const models::ModelConfig&) { return int64_t(0); };  // its weights are not parameters
    k.make = [](const models::ModelConfig& c, Rng&, uint64_t) -> std::unique_ptr<models::Seq2SeqModel> {
      return std::make_unique<CachedAttentionModel>(c);
    };
    k.section = [] { return std::make_unique<CachedAttentionConfig>(); };
    models::register_model_kind(std::move(k));
    return true;
  }();
  (void)registered;
}

// The model, built as any model is: make_model over a config JSON naming its type.
std::unique_ptr<CachedAttentionModel> make_cached_model(bool cached) {
  register_cached_attention_kind();
  const models::ModelConfig c = models::model_config_from_json(
      std::string(R"({"type": "test_cached_attention", "src_vocab": )") + std::to_string(kSrcVocab) +
      R"(, "tgt_vocab": )" + std::to_string(kVocab) + R"(, "cached": )" + (cached ? "true" : "false") + "}");
  Rng init(0);
  std::unique_ptr<models::Seq2SeqModel> m = models::make_model(c, init, 0);
  auto* typed = dynamic_cast<CachedAttentionModel*>(m.get());
  if (!typed) throw std::logic_error("make_model did not build the registered kind");
  m.release();
  return std::unique_ptr<CachedAttentionModel>(typed);
}

TEST(DecoderState, TheTestKindIsRegisteredAndBuiltFromItsConfig) {
  const auto model = make_cached_model(false);
  EXPECT_EQ(model->config().type, "test_cached_attention");
  const auto names = models::model_kind_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test_cached_attention"), names.end());
  const std::string json = models::to_json(model->config());
  EXPECT_NE(json.find(R"("cached":false)"), std::string::npos) << json;
  EXPECT_EQ(models::to_json(models::model_config_from_json(json)), json);
  EXPECT_THROW(models::register_model_kind(models::model_kind("test_cached_attention")), std::invalid_argument);  // taken
}

using Batch = SourceBatch;
Batch batch() { return random_source_batch({5, 2, 4, 1}, 5, 3, kSrcVocab, 3); }

decode::SearchOptions options(int beam) {
  decode::SearchOptions o;
  o.beam = beam;
  o.nbest = beam;
  o.max_len_ratio = 0.0, o.max_len_offset = 9;  // 9 steps at most: the cache holds 9 positions
  o.length_penalty = 0.0;
  return o;
}

void expect_same(const std::vector<decode::SearchResult>& x, const std::vector<decode::SearchResult>& y) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t s = 0; s < x.size(); ++s) {
    ASSERT_EQ(x[s].hypotheses.size(), y[s].hypotheses.size()) << "sentence " << s;
    for (size_t h = 0; h < x[s].hypotheses.size(); ++h) {
      const decode::Hypothesis &a = x[s].hypotheses[h], &b = y[s].hypotheses[h];
      EXPECT_EQ(a.tokens, b.tokens) << "sentence " << s << " hypothesis " << h;
      EXPECT_EQ(a.log_prob, b.log_prob) << "sentence " << s << " hypothesis " << h;
      EXPECT_EQ(a.finished, b.finished) << "sentence " << s << " hypothesis " << h;
      EXPECT_EQ(a.attention, b.attention) << "sentence " << s << " hypothesis " << h;
    }
  }
}

// (a), one step at a time: rows in any order (beams of sentences), the cache
// filled step by step, against step()'s recomputation of the whole prefix.
TEST(DecoderState, CachedStepEqualsRecomputedPrefix) {
  NoGradGuard no_grad;
  const auto model_ptr = make_cached_model(true);
  CachedAttentionModel& model = *model_ptr;
  const Batch b = batch();
  models::Encoded e = model.encode(b.src, b.lengths);
  const std::vector<int64_t> rows = {2, 2, 0, 3, 1, 1, 0};
  const int64_t N = int64_t(rows.size()), S = b.src.size(1), T = 5;
  auto dec = model.decoder(e.memory, N, nullptr);
  dec->report_attention(models::kAttentionMap);
  models::DecoderState cached = dec->start(models::select_rows(e.state, rows), N, T);
  models::DecoderState full = models::select_rows(e.state, rows);
  const models::EncoderMemory per_row = models::select_rows(e.memory, rows);
  Rng rng(5);
  std::vector<int> prev(size_t(N), model.config().specials.bos);
  for (int64_t t = 0; t < T; ++t) {
    Tensor ids = Tensor::empty({N});
    for (int64_t i = 0; i < N; ++i) ids.data()[i] = float(prev[size_t(i)]);
    models::StepOutput ref = model.step(per_row, full, ids, t);
    const models::StepTop& out = dec->step(rows, cached, prev, kVocab, t);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < kVocab; ++j) {
        const int tok = out.tokens[size_t(i * kVocab + j)];
        EXPECT_EQ(out.log_probs[size_t(i * kVocab + j)], ref.log_probs.data()[i * kVocab + tok])
            << "step " << t << " row " << i;
      }
    EXPECT_EQ(out.attention.to_vector(), ref.attention.find(models::kAttentionMap)->to_vector()) << "step " << t;
    full = ref.state;
    for (int& p : prev) p = int(rng.below(kVocab));
  }
  EXPECT_THROW(dec->step(rows, cached, prev, 1, T), std::invalid_argument);  // the cache holds T positions
}

// (a) and (b) through the real searches: the cached decoder against the
// default one over step() (greedy and beam 3), and beam 1 against greedy.
TEST(DecoderState, SearchesWithTheCacheEqualSearchesThatRecompute) {
  const auto cached_ptr = make_cached_model(true), recompute_ptr = make_cached_model(false);
  CachedAttentionModel &cached = *cached_ptr, &recompute = *recompute_ptr;
  const Batch b = batch();
  const auto greedy = decode::greedy_search(cached, b.src, b.lengths, options(1));
  expect_same(greedy, decode::greedy_search(recompute, b.src, b.lengths, options(1)));
  expect_same(greedy, decode::beam_search(cached, b.src, b.lengths, options(1)));  // (b)
  expect_same(decode::beam_search(cached, b.src, b.lengths, options(3)),
              decode::beam_search(recompute, b.src, b.lengths, options(3)));
}

// (c) reference_beam.h's search for sentence s, each live hypothesis' whole
// prefix recomputed by step() from the initial state: no state is reordered.
std::vector<decode::Hypothesis> reference_beam(const CachedAttentionModel& m, const Batch& b, int64_t s,
                                               const decode::SearchOptions& o) {
  NoGradGuard no_grad;
  const int64_t len = b.lengths[size_t(s)];
  models::Encoded e = m.encode(b.src.narrow0(s, 1).clone(), {len});
  const int bos = m.config().specials.bos;
  auto step = [&](int64_t t, const std::vector<decode::Hypothesis>& live, const std::vector<int64_t>&) {
    ReferenceStep r;
    for (const decode::Hypothesis& h : live) {
      std::vector<int> inputs = {bos};  // the hypothesis' whole prefix, BOS first
      inputs.insert(inputs.end(), h.tokens.begin(), h.tokens.end());
      models::DecoderState st = e.state;
      models::StepOutput out;
      for (int64_t j = 0; j <= t; ++j) {
        out = m.step(e.memory, st, Tensor::from({float(inputs[size_t(j)])}, {1}), j);
        st = out.state;
      }
      r.log_probs.insert(r.log_probs.end(), out.log_probs.data(), out.log_probs.data() + kVocab);
      const Tensor& w = *out.attention.find(models::kAttentionMap);
      r.attention.emplace_back(w.data(), w.data() + len);
    }
    return r;
  };
  return testing::reference_beam(kVocab, m.config().specials.eos, o.max_len_offset, o, step);
}

TEST(DecoderState, ReorderedCacheEqualsBeamSearchOverFullPrefixes) {
  const auto model_ptr = make_cached_model(true);
  CachedAttentionModel& model = *model_ptr;
  const Batch b = batch();
  for (int beam : {2, 3, 5}) {
    SCOPED_TRACE("beam " + std::to_string(beam));
    const decode::SearchOptions o = options(beam);
    const auto got = decode::beam_search(model, b.src, b.lengths, o);
    std::vector<decode::SearchResult> want(got.size());
    for (size_t s = 0; s < got.size(); ++s) {
      want[s].src_len = b.lengths[s];
      want[s].hypotheses = reference_beam(model, b, int64_t(s), o);
    }
    expect_same(got, want);
  }
  // not vacuous: the beams differ from greedy somewhere, so rows were reordered and dropped
  const auto greedy = decode::greedy_search(model, b.src, b.lengths, options(1));
  const auto beam5 = decode::beam_search(model, b.src, b.lengths, options(5));
  bool differs = false;
  for (size_t s = 0; s < greedy.size(); ++s)
    differs = differs || greedy[s].hypotheses[0].tokens != beam5[s].hypotheses[0].tokens ||
              beam5[s].hypotheses.size() > 1;
  EXPECT_TRUE(differs);
}

// The search sizes the state once: max_rows = B * beam, max_steps from the
// options and the longest source; the decoder never sees more rows.
TEST(DecoderState, SearchSizesTheStateOnce) {
  const auto model_ptr = make_cached_model(true);
  CachedAttentionModel& model = *model_ptr;
  const Batch b = batch();
  decode::SearchOptions o = options(3);
  o.max_len_ratio = 1.0, o.max_len_offset = 2;  // the longest source (5) allows 7 steps
  const auto r = decode::beam_search(model, b.src, b.lengths, o);
  EXPECT_EQ(model.sizes.max_rows, 4 * 3);
  EXPECT_EQ(model.sizes.max_steps, 7);
  EXPECT_GT(model.sizes.most_rows, 4);  // beams were alive
  EXPECT_LE(model.sizes.most_rows, 4 * 3);
  for (const auto& s : r)
    for (const auto& h : s.hypotheses) EXPECT_LE(int64_t(h.tokens.size()), s.src_len + 2);
  decode::greedy_search(model, b.src, b.lengths, o);
  EXPECT_EQ(model.sizes.max_rows, 4);
  EXPECT_EQ(model.sizes.max_steps, 7);
}

// DecoderState's own bookkeeping: gather reorders, drops and repeats rows in
// place; live views follow rows().
TEST(DecoderState, GatherReordersRowsInPlace) {
  models::DecoderState s(3, 5);
  Tensor& x = s.add("x", {2});
  for (int64_t i = 0; i < 10; ++i) x.data()[i] = float(i);
  EXPECT_EQ(s.live("x").shape(), Shape({3, 2}));
  s.gather({2, 0, 2, 1});
  EXPECT_EQ(s.rows(), 4);
  EXPECT_EQ(s.live("x").to_vector(), (std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3}));
  s.gather({3});
  EXPECT_EQ(s.live("x").to_vector(), (std::vector<float>{2, 3}));
  EXPECT_THROW(s.gather({1}), std::invalid_argument);                 // row 1 of 1
  EXPECT_THROW(s.gather({0, 0, 0, 0, 0, 0}), std::invalid_argument);  // 6 rows into 5
  EXPECT_THROW(s.set("y", Tensor::zeros({1, 2})), std::invalid_argument);  // buffers of 5 rows, 1 live
  EXPECT_THROW(s.live("missing"), std::invalid_argument);
}

// A buffer with a time axis ([rows, H, T, hd], a key cache) moves only the
// filled positions of each head; a buffer without one moves whole rows.
TEST(DecoderState, GatherMovesOnlyTheFilledPrefixOfATimeAxis) {
  const int64_t H = 2, T = 4, hd = 3, row = H * T * hd;
  models::DecoderState s(2, 2);
  Tensor& k = s.add("k", {H, T, hd}, 1);
  Tensor& y = s.add("y", {2});
  for (int64_t i = 0; i < k.numel(); ++i) k.data()[i] = float(i + 1);
  for (int64_t i = 0; i < y.numel(); ++i) y.data()[i] = float(100 + i);
  const std::vector<float> before = k.to_vector();
  s.set_filled_steps(2);
  s.gather({1, 0});
  const std::vector<float> after = s.live("k").to_vector();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < hd; ++d) {
          const int64_t at = i * row + (h * T + t) * hd + d, from = (1 - i) * row + (h * T + t) * hd + d;
          if (t < 2) EXPECT_EQ(after[size_t(at)], before[size_t(from)]) << i << " " << h << " " << t;
        }  // positions 2, 3 are past the filled prefix: whatever the spare buffer held
  EXPECT_EQ(s.live("y").to_vector(), (std::vector<float>{102, 103, 100, 101}));
  s.set_filled_steps(-1);  // the whole axis again: every position moves
  s.gather({0, 1});
  EXPECT_EQ(s.live("k").to_vector(), after);
  EXPECT_THROW(s.add("bad", {2}, 1), std::invalid_argument);  // no axis 1 in [2]
}

// Growing a time axis keeps each row's filled positions where a reader looks
// for them ([row, h, t, d] in the longer buffer) and leaves other buffers be.
TEST(DecoderState, GrowingATimeAxisKeepsTheFilledPositions) {
  const int64_t H = 2, T = 3, hd = 2;
  models::DecoderState s(2, 3);
  Tensor& k = s.add("k", {H, T, hd}, 1);
  s.add("y", {1});
  for (int64_t i = 0; i < k.numel(); ++i) k.data()[i] = float(i + 1);
  const std::vector<float> before = k.to_vector();
  s.set_filled_steps(2);
  s.grow_time_axes(7);
  ASSERT_EQ(s.buffer("k").shape(), Shape({3, H, 7, hd}));
  EXPECT_EQ(s.buffer("y").shape(), Shape({3, 1}));
  const float* g = s.buffer("k").data();
  for (int64_t r = 0; r < 2; ++r)  // the live rows
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < 2; ++t)
        for (int64_t d = 0; d < hd; ++d)
          EXPECT_EQ(g[((r * H + h) * 7 + t) * hd + d], before[size_t(((r * H + h) * T + t) * hd + d)]);
  s.grow_time_axes(5);  // never shrinks
  EXPECT_EQ(s.buffer("k").size(2), 7);
  s.gather({1, 1, 0});  // a gather after growing: the spare takes the new shape
  EXPECT_EQ(s.live("k").to_vector()[0], before[size_t(H * T * hd)]);
}

// An unmoved buffer ([T, M, ...], the Transformer's key / value slots) stays
// where the steps wrote it through gathers; growing lengthens its axis 0 and
// keeps the filled positions; live() gives it whole.
TEST(DecoderState, UnmovedBufferStaysThroughGathersAndGrowsItsFirstAxis) {
  models::DecoderState s(3, 3);
  Tensor& k = s.add_unmoved("k", 2, {2});
  Tensor& slot = s.add("slot", {2}, 0);
  for (int64_t i = 0; i < k.numel(); ++i) k.data()[i] = float(i + 1);
  for (int64_t i = 0; i < slot.numel(); ++i) slot.data()[i] = float(i);
  const std::vector<float> before = k.to_vector();
  s.set_filled_steps(1);
  s.gather({2, 2});
  EXPECT_EQ(s.buffer("k").to_vector(), before);  // not moved
  EXPECT_EQ(s.live("k").shape(), Shape({2, 3, 2}));
  EXPECT_EQ(s.live("slot").shape(), Shape({2, 2}));
  EXPECT_EQ(s.live("slot").data()[0], 4.0f);  // row 2's position 0, moved
  EXPECT_EQ(s.live("slot").data()[2], 4.0f);
  s.grow_time_axes(5);
  ASSERT_EQ(s.buffer("k").shape(), Shape({5, 3, 2}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(s.buffer("k").data()[i], before[size_t(i)]);  // position 0, every slot
  EXPECT_EQ(s.buffer("slot").shape(), Shape({3, 5}));
  EXPECT_THROW(s.add_unmoved("bad", 0, {2}), std::invalid_argument);
}

}  // namespace
}  // namespace attn::testing::decoder_state_test
