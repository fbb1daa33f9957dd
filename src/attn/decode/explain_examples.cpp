// The seed tutorials' worked examples (explain_examples.h), computed with
// attn's attention functions and layers.
#include "attn/decode/explain_examples.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>

#include "attn/attention/attention.h"
#include "attn/autograd/node.h"
#include "attn/nn/additive_attention.h"
#include "attn/nn/layers.h"

namespace attn::decode {
namespace {

// NumPy's legacy random.randint(3, size=(3, 3)) after random.seed(seed):
// MT19937 seeded like std::mt19937, each value a 32-bit draw masked to 2 bits
// and redrawn while above 2 (numpy's masked rejection sampling).
Tensor numpy_randint3(std::mt19937& mt) {
  Tensor t = Tensor::empty({3, 3});
  for (int64_t i = 0; i < 9; ++i) {
    uint32_t r;
    do r = uint32_t(mt()) & 3u;
    while (r > 2);
    t.data()[i] = float(r);
  }
  return t;
}

// NumPy's print style: [a b c] with `decimals` digits, rows on their own lines.
// Six by default: attn computes in float32, whose results are the tutorial's
// float64 ones to about 7 significant digits.
std::string matrix(const Tensor& t, int decimals = 6, const std::string& indent = "") {
  const int64_t rows = t.dim() == 2 ? t.size(0) : 1, cols = t.numel() / (rows ? rows : 1);
  std::string s = rows > 1 ? "[" : "";
  for (int64_t r = 0; r < rows; ++r) {
    if (r) s += "\n" + indent + " ";
    s += "[";
    for (int64_t c = 0; c < cols; ++c) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%s%.*f", c ? " " : "", decimals, double(t.data()[r * cols + c]));
      s += buf;
    }
    s += "]";
  }
  return rows > 1 ? s + "]" : s;
}

Tensor as4(const Tensor& x) { return reshape(x, {1, 1, x.size(0), x.size(1)}); }  // [L, d] -> [B=1, H=1, L, d]

}  // namespace

GeneralAttentionExample general_attention_example() {
  NoGradGuard no_grad;
  GeneralAttentionExample ex;
  ex.words = Tensor::from({1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1}, {4, 3});
  std::mt19937 mt(42);  // random.seed(42)
  ex.W_Q = numpy_randint3(mt);
  ex.W_K = numpy_randint3(mt);
  ex.W_V = numpy_randint3(mt);
  ex.Q = matmul(ex.words, ex.W_Q);
  ex.K = matmul(ex.words, ex.W_K);
  ex.V = matmul(ex.words, ex.W_V);
  ex.scores = reshape(attention::dot_scores(as4(ex.Q), as4(ex.K)), {4, 4});
  attention::AttentionOptions o;
  o.need_weights = true;
  attention::AttentionOutput out = attention::scaled_dot_product_attention(as4(ex.Q), as4(ex.K), as4(ex.V), o);
  ex.weights = reshape(out.weights, {4, 4});
  ex.outputs = reshape(out.context, {4, 3});
  return ex;
}

std::string general_attention_text(const GeneralAttentionExample& ex) {
  std::ostringstream o;
  o << "Seed 002, \"The Attention Mechanism from Scratch\": general attention, computed by attn\n\n"
    << "the encoder representations of four words:\n";
  for (int64_t i = 0; i < 4; ++i)
    o << "  word_" << i + 1 << " = " << matrix(reshape(slice(ex.words, 0, i, 1), {1, 3}), 0) << "\n";
  o << "\nweight matrices, drawn as the tutorial does (random.seed(42); random.randint(3, size=(3, 3))):\n"
    << "W_Q =\n" << matrix(ex.W_Q, 0) << "\nW_K =\n" << matrix(ex.W_K, 0) << "\nW_V =\n" << matrix(ex.W_V, 0) << "\n\n"
    << "queries, keys and values: Q = words W_Q, K = words W_K, V = words W_V\n"
    << "Q =\n" << matrix(ex.Q, 0) << "\nK =\n" << matrix(ex.K, 0) << "\nV =\n" << matrix(ex.V, 0) << "\n\n";
  o << "the first word: its query q_1 scored against every key, scores = [q_1 . k_1, ..., q_1 . k_4]\n"
    << "scores = " << matrix(reshape(slice(ex.scores, 0, 0, 1), {1, 4}), 0) << "\n"
    << "weights = softmax(scores / sqrt(3)) = " << matrix(reshape(slice(ex.weights, 0, 0, 1), {1, 4})) << "\n"
    << "attention = sum_j weights_j v_j = " << matrix(reshape(slice(ex.outputs, 0, 0, 1), {1, 3})) << "\n\n";
  o << "all four words at once (matrix form):\n"
    << "scores = Q K^T =\n" << matrix(ex.scores, 0) << "\n"
    << "weights = softmax(Q K^T / sqrt(3)) =\n" << matrix(ex.weights) << "\n"
    << "attention = weights V =\n" << matrix(ex.outputs) << "\n";
  return o.str();
}

namespace {

void set(Tensor& t, const std::vector<float>& v) {
  if (int64_t(v.size()) != t.numel()) throw std::logic_error("explain example: parameter size");
  std::copy(v.begin(), v.end(), t.data());
}

// The toy model of the translation-step example: a pointer over the source.
// s is "where to look": f_att scores h_j high when s points at j; the output
// layer reads the context (what was looked at); g_U moves the pointer one word
// on. Hand-set weights, so every number can be followed on paper.
struct ToyTranslator {
  nn::AdditiveAttention f_att;  // e_j = v^T tanh(W_1 s + W_2 h_j + b)
  nn::Linear out;               // p(y_t) = softmax(W_y c_t + b_y)
  nn::Linear g_U;               // s_t = tanh(W_s c_t)
  explicit ToyTranslator(Rng& rng) : f_att(3, 3, 3, rng), out(3, 4, true, rng), g_U(3, 3, false, rng) {
    set(f_att.query_proj_weight, {5, 0, 0, 0, 5, 0, 0, 0, 5});  // W_1 = 5 I
    set(f_att.key_proj_weight, {2, 0, 0, 0, 2, 0, 0, 0, 2});    // W_2 = 2 I
    set(f_att.key_proj_bias, {-5, -5, -5});                     // b
    set(f_att.v, {3, 3, 3});                                    // v
    set(out.weight, {6, -2, -2, -2, 6, -2, -2, -2, 6, 1, 1, 1});  // rows: le, chat, dort, [STOP]
    set(out.bias, {0, 0, 0, 2});
    set(g_U.weight, {0, 0, 0, 4, 0, 0, 0, 4, 0});  // the pointer one word on: (W_s c)_{j+1} = 4 c_j
  }
};

}  // namespace

TranslationStepExample translation_step_example() {
  NoGradGuard no_grad;
  Rng rng(0);  // only to construct the layers; every weight is then set by hand
  ToyTranslator m(rng);
  TranslationStepExample ex;
  ex.source_words = {"the", "cat", "sleeps"};
  ex.target_words = {"le", "chat", "dort", "[STOP]"};
  const int64_t S = 3, stop = 3;
  ex.h = Tensor::from({1, 0, 0, 0, 1, 0, 0, 0, 1}, {S, 3});
  ex.s0 = Tensor::from({1, 0, 0}, {3});
  Tensor values = reshape(ex.h, {1, S, 3}), keys = m.f_att.project_keys(values);  // W_2 h_j + b, once
  Tensor s = ex.s0;
  for (int t = 0; t < 6; ++t) {
    TranslationStepRecord r;
    r.s_prev = s;
    attention::AdditiveStepOutput a = m.f_att.step(reshape(s, {1, 3}), keys, values, Tensor(), true);
    r.e = reshape(a.scores, {S});
    r.a = reshape(a.weights, {S});
    r.c = reshape(a.context, {3});
    r.p = reshape(softmax(m.out.forward(a.context), -1), {4});
    r.y = int(std::max_element(r.p.data(), r.p.data() + 4) - r.p.data());
    r.s = reshape(tanh(m.g_U.forward(a.context)), {3});
    s = r.s;
    ex.steps.push_back(r);
    if (r.y == stop) break;
  }
  return ex;
}

namespace {

std::string num(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(x));
  return buf;
}

void walk_step(std::ostream& o, const TranslationStepExample& ex, size_t i) {
  const TranslationStepRecord& r = ex.steps[i];
  const std::string t = std::to_string(i + 1), prev = std::to_string(i);
  const int64_t S = int64_t(ex.source_words.size());
  o << "t = " << t << (i == 1 ? "  (Figure 7: the same steps, now from s_1)" : "") << "\n"
    << "  decoder state s_" << prev << " = " << matrix(r.s_prev, 3) << "\n"
    << "  1. alignment scores (Figure 3): e_" << t << ",j = f_att(s_" << prev << ", h_j)\n";
  for (int64_t j = 0; j < S; ++j)
    o << "       e_" << t << "," << j + 1 << " = " << num(r.e.data()[j]) << "   (" << ex.source_words[size_t(j)] << ")\n";
  o << "  2. attention weights (Figure 4): a_" << t << ",j = softmax_j(e_" << t << ",j), summing to 1\n";
  for (int64_t j = 0; j < S; ++j)
    o << "       a_" << t << "," << j + 1 << " = " << num(r.a.data()[j]) << "   "
      << std::string(size_t(std::lround(r.a.data()[j] * 40)), '#') << "\n";
  o << "  3. context vector (Figure 5): c_" << t << " = sum_j a_" << t << ",j h_j = " << matrix(r.c, 3) << "\n"
    << "  4. output (Figure 6): p(y_" << t << ") = softmax(W_y c_" << t << " + b_y):";
  for (size_t k = 0; k < ex.target_words.size(); ++k) o << "  " << ex.target_words[k] << " " << num(r.p.data()[k]);
  o << "\n       y_" << t << " = " << ex.target_words[size_t(r.y)] << "\n"
    << "     new decoder state s_" << t << " = g_U(s_" << prev << ", c_" << t << ", y_" << prev
    << ") = tanh(W_s c_" << t << ") = " << matrix(r.s, 3) << "\n\n";
}

}  // namespace

std::string translation_step_text(const TranslationStepExample& ex) {
  std::ostringstream o;
  o << "Seed 003, \"Introduction to Attention Mechanism\": one decoder step at a time, on a toy model\n"
    << "source: " << ex.source_words[0];
  for (size_t j = 1; j < ex.source_words.size(); ++j) o << " " << ex.source_words[j];
  o << "\n\nencoder hidden states (one per source word):\n";
  for (size_t j = 0; j < ex.source_words.size(); ++j)
    o << "  h_" << j + 1 << " = " << matrix(reshape(slice(ex.h, 0, int64_t(j), 1), {3}), 0) << "   ("
      << ex.source_words[j] << ")\n";
  o << "initial decoder state s_0 = " << matrix(ex.s0, 0) << "\n"
    << "alignment function (an MLP, attn's AdditiveAttention layer): f_att(s, h) = v^T tanh(W_1 s + W_2 h + b),\n"
    << "  W_1 = 5 I, W_2 = 2 I, b = [-5 -5 -5], v = [3 3 3]\n"
    << "output layer: p(y_t) = softmax(W_y c_t + b_y); decoder update g_U: s_t = tanh(W_s c_t), W_s moving\n"
    << "  the attention one word on (this toy's g_U ignores s_{t-1} and y_{t-1}; a trained GRU reads them)\n\n";
  for (size_t i = 0; i < ex.steps.size(); ++i) walk_step(o, ex, i);
  o << "output:";
  for (const TranslationStepRecord& r : ex.steps) o << " " << ex.target_words[size_t(r.y)];
  o << "\n";
  return o.str();
}

std::string example_text(const std::string& name) {
  if (name == "general-attention") return general_attention_text(general_attention_example());
  if (name == "translation-step") return translation_step_text(translation_step_example());
  throw std::invalid_argument("--example: unknown example \"" + name +
                              "\" (known: general-attention, translation-step)");
}

}  // namespace attn::decode
