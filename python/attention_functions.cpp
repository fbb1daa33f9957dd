// attn's attention functions on NumPy arrays (attention/attention.h,
// nn/multihead.h): the five scores, the masked softmax, the fused scaled
// dot-product attention and multi-head attention with given weights, each
// with its backward through `grad_output` (call.h). Shapes, as attention.h:
//   q [B, H, Lq, D]   k [B, H, Lk, Dk]   v [B, H, Lk, Dv]
//   scores, weights [B, H, Lq, Lk]       context [B, H, Lq, Dv]
// The shape checks are the C++ functions' own: their std::invalid_argument
// reaches Python as ValueError with the same message.
#include <pybind11/stl.h>

#include <cmath>

#include "attn/attention/attention.h"
#include "attn/autograd/ops.h"
#include "attn/nn/multihead.h"
#include "bindings.h"
#include "call.h"

namespace attn::python {

namespace {

using attention::Mask;

// Docstrings: shapes as attention/attention.h.
constexpr const char* kDoc_dot_scores = R"(q [B, H, Lq, D], k [B, H, Lk, D] -> scores [B, H, Lq, Lk] = q . k.

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_scaled_dot_scores = R"(q [B, H, Lq, D], k [B, H, Lk, D] -> scores [B, H, Lq, Lk] = q . k * scale (default 1/sqrt(D)).

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_general_scores = R"(q [B, H, Lq, D], k [B, H, Lk, Dk], W [D, Dk] -> scores [B, H, Lq, Lk] = q^T W k.

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_additive_scores = R"(q [B, H, Lq, D], k [B, H, Lk, Dk], W1 [A, D], W2 [A, Dk], v [A], bias [A] or None -> scores [B, H, Lq, Lk] = v^T tanh(W1 q + W2 k + bias) (Bahdanau).

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_concat_scores = R"(q [B, H, Lq, D], k [B, H, Lk, Dk], Wa [A, D + Dk], v [A] -> scores [B, H, Lq, Lk] = v^T tanh(Wa [q; k]) (Luong's concat).

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_masked_softmax = R"(scores [B, H, Lq, Lk] -> weights [B, H, Lq, Lk], the softmax over the keys a query sees: key_lengths [B] (float32 counts; keys j >= length hidden), causal (keys j <= i), keep (0/1 broadcastable to [B, H, Lq, Lk]). A row with no visible key is zeros.

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_scaled_dot_product_attention = R"(q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv] -> context [B, H, Lq, Dv] by the fused kernel (attention/flash.h: the [Lq, Lk] weights never stored); scale default 1/sqrt(D); masks as masked_softmax. With grad_output [B, H, Lq, Dv]: (context, {'q', 'k', 'v'}) from the fused backward.

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";
constexpr const char* kDoc_multi_head_attention = R"(query [B, Lq, E], key [B, Lk, E], value [B, Lk, E] -> [B, Lq, E] (nn/multihead.h) with PyTorch's nn.MultiheadAttention weights: in_proj_weight [3E, E] (rows W_Q, W_K, W_V), in_proj_bias [3E], out_proj_weight [E, E], out_proj_bias [E] (both biases or neither); E divisible by num_heads; masks as masked_softmax. The same array as query, key and value runs the packed self-attention path; an array given as several arguments has its total gradient under each name.

Arrays: float32, C-contiguous (TypeError / ValueError otherwise), read in place. With grad_output= (d loss / d result, the result's shape): returns (result, {argument: gradient}).)";

// The mask arguments every masked function takes (attention.h's Mask).
Mask make_mask(const char* fn, const py::object& key_lengths, bool causal, const py::object& keep) {
  Mask m;
  m.key_lengths = borrow_optional(key_lengths, fn, "key_lengths");
  m.causal = causal;
  m.keep = borrow_optional(keep, fn, "keep");
  return m;
}

NamedInput in(const char* fn, const char* name, const py::object& a, bool differentiable = true) {
  return {name, borrow_optional(a, fn, name), differentiable};
}

void add_scores(py::module_& m) {
  m.def(
      "dot_scores",
      [](const py::object& q, const py::object& k, const py::object& grad_output) {
        std::vector<NamedInput> x{in("dot_scores", "q", q), in("dot_scores", "k", k)};
        return call_with_grad("dot_scores", x, grad_output,
                              [&] { return attention::dot_scores(x[0].tensor, x[1].tensor); });
      },
      kDoc_dot_scores, py::arg("q"), py::arg("k"), py::kw_only(), py::arg("grad_output") = py::none());
  m.def(
      "scaled_dot_scores",
      [](const py::object& q, const py::object& k, std::optional<float> scale, const py::object& grad_output) {
        std::vector<NamedInput> x{in("scaled_dot_scores", "q", q), in("scaled_dot_scores", "k", k)};
        return call_with_grad("scaled_dot_scores", x, grad_output,
                              [&] { return attention::scaled_dot_scores(x[0].tensor, x[1].tensor, scale); });
      },
      kDoc_scaled_dot_scores, py::arg("q"), py::arg("k"), py::kw_only(), py::arg("scale") = py::none(), py::arg("grad_output") = py::none());
  m.def(
      "general_scores",
      [](const py::object& q, const py::object& k, const py::object& W, const py::object& grad_output) {
        const char* fn = "general_scores";
        std::vector<NamedInput> x{in(fn, "q", q), in(fn, "k", k), in(fn, "W", W)};
        return call_with_grad(fn, x, grad_output,
                              [&] { return attention::general_scores(x[0].tensor, x[1].tensor, x[2].tensor); });
      },
      kDoc_general_scores, py::arg("q"), py::arg("k"), py::arg("W"), py::kw_only(), py::arg("grad_output") = py::none());
  m.def(
      "additive_scores",
      [](const py::object& q, const py::object& k, const py::object& W1, const py::object& W2, const py::object& v,
         const py::object& bias, const py::object& grad_output) {
        const char* fn = "additive_scores";
        std::vector<NamedInput> x{in(fn, "q", q),   in(fn, "k", k), in(fn, "W1", W1),
                                  in(fn, "W2", W2), in(fn, "v", v), in(fn, "bias", bias)};
        return call_with_grad(fn, x, grad_output, [&] {
          return attention::additive_scores(x[0].tensor, x[1].tensor,
                                            {x[2].tensor, x[3].tensor, x[4].tensor, x[5].tensor});
        });
      },
      kDoc_additive_scores, py::arg("q"), py::arg("k"), py::arg("W1"), py::arg("W2"), py::arg("v"), py::kw_only(),
      py::arg("bias") = py::none(), py::arg("grad_output") = py::none());
  m.def(
      "concat_scores",
      [](const py::object& q, const py::object& k, const py::object& Wa, const py::object& v,
         const py::object& grad_output) {
        const char* fn = "concat_scores";
        std::vector<NamedInput> x{in(fn, "q", q), in(fn, "k", k), in(fn, "Wa", Wa), in(fn, "v", v)};
        return call_with_grad(fn, x, grad_output, [&] {
          return attention::concat_scores(x[0].tensor, x[1].tensor, {x[2].tensor, x[3].tensor});
        });
      },
      kDoc_concat_scores, py::arg("q"), py::arg("k"), py::arg("Wa"), py::arg("v"), py::kw_only(), py::arg("grad_output") = py::none());
}

void add_softmax_and_sdpa(py::module_& m) {
  m.def(
      "masked_softmax",
      [](const py::object& scores, const py::object& key_lengths, bool causal, const py::object& keep,
         const py::object& grad_output) {
        const char* fn = "masked_softmax";
        std::vector<NamedInput> x{in(fn, "scores", scores)};
        const Mask mask = make_mask(fn, key_lengths, causal, keep);
        const Tensor& s = x[0].tensor;
        if (s.dim() != 4)
          throw std::invalid_argument(std::string(fn) + ": scores " + shape_str(s) + " must be [B, H, Lq, Lk]");
        return call_with_grad(fn, x, grad_output, [&] {
          const Tensor keep01 = attention::mask_tensor(mask, s.size(0), s.size(1), s.size(2), s.size(3));
          return softmax(s, -1, keep01);
        });
      },
      kDoc_masked_softmax, py::arg("scores"), py::kw_only(), py::arg("key_lengths") = py::none(), py::arg("causal") = false,
      py::arg("keep") = py::none(), py::arg("grad_output") = py::none());
  m.def(
      "scaled_dot_product_attention",
      [](const py::object& q, const py::object& k, const py::object& v, std::optional<float> scale,
         const py::object& key_lengths, bool causal, const py::object& keep, const py::object& grad_output) {
        const char* fn = "scaled_dot_product_attention";
        std::vector<NamedInput> x{in(fn, "q", q), in(fn, "k", k), in(fn, "v", v)};
        attention::FusedOptions o;
        o.mask = make_mask(fn, key_lengths, causal, keep);
        return call_with_grad(fn, x, grad_output, [&] {
          const Tensor& tq = x[0].tensor;
          // 1/sqrt(D), as ScaledDot; a malformed q gets 1 here and sdpa_fused's message next
          o.scale = scale ? *scale : (tq.dim() == 4 && tq.size(3) > 0 ? 1.0f / std::sqrt(float(tq.size(3))) : 1.0f);
          return attention::sdpa_fused(tq, x[1].tensor, x[2].tensor, o);
        });
      },
      kDoc_scaled_dot_product_attention, py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(), py::arg("scale") = py::none(),
      py::arg("key_lengths") = py::none(), py::arg("causal") = false, py::arg("keep") = py::none(),
      py::arg("grad_output") = py::none());
}

// The given weights checked against the layer's own shapes (PyTorch's
// nn.MultiheadAttention names), then put in the layer's place.
void set_weight(const char* name, Tensor& slot, const Tensor& given) {
  if (!given.defined()) return;
  check_same_shape(given, slot, (std::string("multi_head_attention: ") + name + " and the layer's").c_str());
  slot = given;
}

void add_multihead(py::module_& m) {
  m.def(
      "multi_head_attention",
      [](const py::object& query, const py::object& key, const py::object& value, int64_t num_heads,
         const py::object& in_proj_weight, const py::object& in_proj_bias, const py::object& out_proj_weight,
         const py::object& out_proj_bias, const py::object& key_lengths, bool causal, const py::object& keep,
         const py::object& grad_output) {
        const char* fn = "multi_head_attention";
        std::vector<NamedInput> x{in(fn, "query", query),
                                  in(fn, "key", key),
                                  in(fn, "value", value),
                                  in(fn, "in_proj_weight", in_proj_weight),
                                  in(fn, "in_proj_bias", in_proj_bias),
                                  in(fn, "out_proj_weight", out_proj_weight),
                                  in(fn, "out_proj_bias", out_proj_bias)};
        // The same array as query and key (and value): one tensor, so the layer
        // takes its self-attention path (one packed projection), as in C++.
        if (key.is(query)) x[1].tensor = x[0].tensor;
        if (value.is(key)) x[2].tensor = x[1].tensor;
        const Mask mask = make_mask(fn, key_lengths, causal, keep);
        const Tensor& q = x[0].tensor;
        if (q.dim() != 3) throw std::invalid_argument(std::string(fn) + ": query " + shape_str(q) + " must be [B, Lq, E]");
        const bool bias = x[4].tensor.defined();
        if (bias != x[6].tensor.defined())
          throw std::invalid_argument(std::string(fn) + ": give both in_proj_bias and out_proj_bias, or neither");
        return call_with_grad(fn, x, grad_output, [&] {
          Rng rng;  // the layer's initial weights, all replaced below
          nn::MultiHeadAttention layer(nn::MultiHeadAttentionOptions(q.size(2), num_heads).set_bias(bias), rng);
          layer.train(false);
          set_weight("in_proj_weight", layer.in_proj_weight, x[3].tensor);
          set_weight("in_proj_bias", layer.in_proj_bias, x[4].tensor);
          set_weight("out_proj_weight", layer.out_proj_weight, x[5].tensor);
          set_weight("out_proj_bias", layer.out_proj_bias, x[6].tensor);
          return layer.forward(q, x[1].tensor, x[2].tensor, mask).context;
        });
      },
      kDoc_multi_head_attention, py::arg("query"), py::arg("key"), py::arg("value"), py::arg("num_heads"), py::kw_only(),
      py::arg("in_proj_weight"), py::arg("in_proj_bias") = py::none(), py::arg("out_proj_weight"),
      py::arg("out_proj_bias") = py::none(), py::arg("key_lengths") = py::none(), py::arg("causal") = false,
      py::arg("keep") = py::none(), py::arg("grad_output") = py::none());
}

}  // namespace

void add_attention_functions(py::module_& m) {
  add_scores(m);
  add_softmax_and_sdpa(m);
  add_multihead(m);
}

}  // namespace attn::python
