// attn explain: the search's path replayed step by step (explain.h).
#include "attn/decode/explain.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/data/utf8.h"
#include "attn/decode/captioner.h"
#include "attn/decode/search.h"
#include "attn/kernels/vocab_topk.h"
#include "attn/models/kinds.h"

namespace attn::decode {
namespace {

double norm(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return std::sqrt(s);
}

// Row 0 of a [1, n] tensor as a vector.
std::vector<float> row0(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.numel()); }

// The internal `name` of `map` (models::internal): "name" for the model's
// default map, "map.name" for another; nullptr when the step has none.
const Tensor* internal_of(const models::StepOutput& out, const std::string& map, const std::string& name) {
  const bool is_default = !out.attention.items.empty() && out.attention.items.front().first == map;
  return out.internals.find(is_default ? name : map + "." + name);
}

// The step's record from step()'s output for the one row and `map`, choosing `chosen`.
ExplainStep record_step(const models::StepOutput& out, const std::string& map, int chosen, int64_t top_k) {
  const Tensor* weights = out.attention.find(map);
  if (!weights) throw std::logic_error("explain: the model's step() reported no attention map \"" + map + "\"");
  ExplainStep s;
  s.weights = row0(*weights);
  if (const Tensor* q = internal_of(out, map, models::internal::kQuery)) s.query = row0(*q);
  if (const Tensor* e = internal_of(out, map, models::internal::kScores)) s.scores = row0(*e);
  if (const Tensor* c = internal_of(out, map, models::internal::kContext)) s.context_norm = norm(c->data(), c->numel());
  if (const Tensor* p = internal_of(out, map, models::internal::kPosition)) s.position = double(p->data()[0]);
  if (const Tensor* w = internal_of(out, map, models::internal::kWindow))
    s.window = std::make_pair(int64_t(w->data()[0]), int64_t(w->data()[1]));
  const int64_t V = out.log_probs.size(1), k = std::min<int64_t>(top_k, V);
  std::vector<int> tokens(static_cast<size_t>(k));
  std::vector<float> lp(static_cast<size_t>(k));
  models::top_k_row(out.log_probs.data(), V, 0.0f, k, tokens.data(), lp.data());
  for (int64_t i = 0; i < k; ++i) s.top_k.emplace_back(tokens[size_t(i)], std::exp(lp[size_t(i)]));
  s.chosen = chosen;
  s.chosen_prob = std::exp(out.log_probs.data()[chosen]);
  return s;
}

}  // namespace

Explanation explain_ids(const models::Seq2SeqModel& model, const std::vector<int>& src, const ExplainOptions& o) {
  if (src.empty()) throw std::invalid_argument("explain: empty source");
  const int64_t S = int64_t(src.size());
  Tensor ids = Tensor::empty({1, S});
  for (int64_t j = 0; j < S; ++j) ids.data()[j] = float(src[size_t(j)]);
  Explanation e = explain_source(model, ids, S, o);
  e.src = src;
  return e;
}

Explanation explain_source(const models::Seq2SeqModel& model, const Tensor& src, int64_t S, const ExplainOptions& o) {
  if (o.top_k < 1) throw std::invalid_argument("explain: top_k " + std::to_string(o.top_k) + " < 1");
  if (!src.defined() || src.dim() < 2 || src.size(0) != 1 || S < 1)
    throw std::invalid_argument("explain: expects one source [1, ...] with at least one position");
  SearchOptions so;
  so.beam = o.beam;
  so.max_len_ratio = o.max_len_ratio;
  so.max_len_offset = o.max_len_offset;
  so.alignments = false;  // the replay records the weights
  so.compute = o.compute;
  so.attention_map = models::resolve_attention_map(model, o.attention_map);  // refuses an unknown name
  const Hypothesis best = search(model, src, {S}, so).at(0).hypotheses.at(0);

  Explanation e;
  e.attention_map = so.attention_map;
  if (!o.self_attention_map.empty() || !model.encoder_attention_maps().empty()) {
    e.self_attention_map = models::resolve_encoder_map(model, o.self_attention_map);  // refuses an unknown name
    const Tensor w = model.encoder_attention(src, {S}, e.self_attention_map);          // [1, S, S]
    e.self_attention.assign(w.data(), w.data() + w.numel());
  }
  e.tokens = best.tokens;
  e.finished = best.finished;
  NoGradGuard no_grad;
  models::Encoded enc = model.encode(src, {S});
  models::DecoderState state = enc.state;
  const data::SpecialIds& sp = model.config().specials;
  Tensor prev = Tensor::full({1}, float(sp.bos));
  const size_t T = e.tokens.size() + (e.finished ? 1 : 0);
  for (size_t t = 0; t < T; ++t) {
    models::StepOutput out = model.step(enc.memory, state, prev, int64_t(t), models::StepDetail::Internals);
    const int chosen = t < e.tokens.size() ? e.tokens[t] : sp.eos;
    e.steps.push_back(record_step(out, so.attention_map, chosen, o.top_k));
    state = std::move(out.state);
    prev = Tensor::full({1}, float(chosen));
  }
  return e;
}

namespace {

nlohmann::json finite_or_null(float x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json step_json(const ExplainStep& s, size_t t, const data::SubwordVocab& tgt) {
  nlohmann::json j;
  j["t"] = t + 1;
  // an internal the model does not give is null
  j["query"] = s.query ? nlohmann::json(*s.query) : nlohmann::json(nullptr);
  j["query_norm"] = s.query ? nlohmann::json(norm(s.query->data(), int64_t(s.query->size()))) : nlohmann::json(nullptr);
  nlohmann::json scores = s.scores ? nlohmann::json::array() : nlohmann::json(nullptr);
  if (s.scores)
    for (float x : *s.scores) scores.push_back(finite_or_null(x));
  j["scores"] = scores;
  j["weights"] = s.weights;
  j["context_norm"] = s.context_norm ? nlohmann::json(*s.context_norm) : nlohmann::json(nullptr);
  j["position"] = s.position ? nlohmann::json(*s.position) : nlohmann::json(nullptr);
  j["window_range"] = s.window ? nlohmann::json::array({s.window->first, s.window->second}) : nlohmann::json(nullptr);
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [token, p] : s.top_k) top.push_back({{"token", tgt.piece(token)}, {"prob", p}});
  j["top_k"] = top;
  j["chosen"] = tgt.piece(s.chosen);
  j["chosen_prob"] = s.chosen_prob;
  return j;
}

}  // namespace

nlohmann::json explanation_json(const Explanation& e, const TranslationModel& m, const ExplainOptions& o) {
  const models::ModelConfig& c = m.model->config();
  nlohmann::json j;
  // the kind describes its attention (models/kinds.h): its score function, a local window
  const models::AttentionDescription attention = models::describe_attention(c);
  j["model"] = c.type;
  j["score"] = attention.score;
  j["window"] = !attention.window.empty()
                    ? nlohmann::json{{"kind", attention.window}, {"D", attention.window_half_width}}
                    : nlohmann::json(nullptr);
  j["beam"] = o.beam;
  j["attention_map"] = e.attention_map;
  nlohmann::json src = nlohmann::json::array(), tgt = nlohmann::json::array(), steps = nlohmann::json::array();
  const std::optional<ImageModelInput> image = image_model_input(c);
  if (image) {  // the grid's cells, row by row
    j["image_attention"] = attention.image_attention;
    j["grid"] = {image->grid_h, image->grid_w};
    for (int r = 0; r < image->grid_h; ++r)
      for (int col = 0; col < image->grid_w; ++col) src.push_back("r" + std::to_string(r) + "c" + std::to_string(col));
  } else {
    for (int id : e.src) src.push_back(m.src_vocab->piece(id));
  }
  for (int id : e.tokens) tgt.push_back(m.tgt_vocab->piece(id));
  for (size_t t = 0; t < e.steps.size(); ++t) steps.push_back(step_json(e.steps[t], t, *m.tgt_vocab));
  j["src_tokens"] = src;
  j["tgt_tokens"] = tgt;
  j[image ? "caption" : "translation"] = m.tgt_vocab->decode(e.tokens);
  j["steps"] = steps;
  if (!e.self_attention_map.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    const size_t S = e.src.size();
    for (size_t i = 0; i < S; ++i)
      rows.push_back(std::vector<float>(e.self_attention.begin() + long(i * S), e.self_attention.begin() + long((i + 1) * S)));
    j["self_attention"] = {{"map", e.self_attention_map}, {"weights", rows}};
  }
  return o.words ? merge_words(j) : j;
}

nlohmann::json explain_text(const TranslationModel& m, const std::string& text, const ExplainOptions& o) {
  const size_t bad = data::find_invalid_utf8(text);
  if (bad != std::string::npos)
    throw std::invalid_argument("text: invalid UTF-8 at byte " + std::to_string(bad));
  const std::vector<int> src = m.src_vocab->encode(text);
  if (src.empty()) throw std::invalid_argument("text: empty (nothing to translate)");
  if (int64_t(src.size()) > o.max_src_pieces)
    throw std::invalid_argument("text: " + std::to_string(src.size()) + " source pieces, over the limit of " +
                                std::to_string(o.max_src_pieces) + " (--max-src-pieces)");
  if (o.beam < 1) throw std::invalid_argument("beam: " + std::to_string(o.beam) + " < 1");
  if (o.top_k < 1) throw std::invalid_argument("top_k: " + std::to_string(o.top_k) + " < 1");
  return explanation_json(explain_ids(*m.model, src, o), m, o);
}

namespace {

// The run's image input, or std::invalid_argument for a text model.
ImageModelInput image_input_or_throw(const TranslationModel& m) {
  const std::optional<ImageModelInput> in = image_model_input(m.model->config());
  if (!in)
    throw std::invalid_argument("explain: the model is " + m.model->config().type +
                                ", which reads text, not images");
  return *in;
}

}  // namespace

nlohmann::json explain_image(const TranslationModel& m, const std::string& path, const ExplainOptions& o) {
  const ImageModelInput in = image_input_or_throw(m);
  if (o.beam < 1) throw std::invalid_argument("beam: " + std::to_string(o.beam) + " < 1");
  nlohmann::json j = explain_pixels(m, image_batch({path}, in), o);
  j["image"] = path;
  return j;
}

nlohmann::json explain_pixels(const TranslationModel& m, const Tensor& pixels, const ExplainOptions& o) {
  const ImageModelInput in = image_input_or_throw(m);
  if (o.beam < 1) throw std::invalid_argument("beam: " + std::to_string(o.beam) + " < 1");
  if (!pixels.defined() || pixels.shape() != Shape({1, 3, int64_t(in.height), int64_t(in.width)}))
    throw std::invalid_argument("explain: expects pixels [1, 3, " + std::to_string(in.height) + ", " +
                                std::to_string(in.width) + "]");
  ExplainOptions io = o;
  io.max_len_ratio = 0;  // a caption's length does not scale with the grid
  io.max_len_offset = CaptionOptions{}.max_words;
  const Explanation e = explain_source(*m.model, pixels, int64_t(in.grid_h) * in.grid_w, io);
  return explanation_json(e, m, o);
}

}  // namespace attn::decode
