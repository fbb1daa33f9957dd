// `attn explain --example NAME`: the worked examples of the seed tutorials,
// computed by attn's own attention code (nothing printed is a constant).
//
//   general-attention  seed 002 ("The Attention Mechanism from Scratch"): four
//                      3-d words, W_Q, W_K, W_V drawn as the tutorial's NumPy
//                      does, scores, softmax weights and attention outputs
//   translation-step   seed 003 ("Introduction to Attention Mechanism"): the
//                      decoder's walk, t = 1, 2, ... on a toy model with named
//                      vectors: encoder hidden states h_j, decoder state s_{t-1},
//                      alignment scores e_tj (Figure 3), weights a_tj (Figure 4),
//                      context c_t (Figure 5), output y_t (Figure 6), the next
//                      step from s_t (Figure 7), until [STOP]
#pragma once
#include <string>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::decode {

// Seed 002's quantities; words W = 4, dimension d = 3.
struct GeneralAttentionExample {
  Tensor words;             // [4, 3] the encoder representations word_1..word_4
  Tensor W_Q, W_K, W_V;     // [3, 3] NumPy random.seed(42); random.randint(3, size=(3, 3)), in this order
  Tensor Q, K, V;           // [4, 3] words @ W
  Tensor scores;            // [4, 4] Q K^T (attention::dot_scores)
  Tensor weights;           // [4, 4] softmax(Q K^T / sqrt(3)) (attention::scaled_dot_product_attention)
  Tensor outputs;           // [4, 3] weights V
};
GeneralAttentionExample general_attention_example();
std::string general_attention_text(const GeneralAttentionExample& ex);

// One decoder step of seed 003's walk (t = 1, 2, ...), the toy model's
// S = 3 source words and 4 target words.
struct TranslationStepRecord {
  Tensor s_prev;    // [3] s_{t-1}, the decoder state the alignment function reads
  Tensor e;         // [S] alignment scores e_tj = f_att(s_{t-1}, h_j)
  Tensor a;         // [S] attention weights a_tj = softmax_j(e_tj)
  Tensor c;         // [3] context vector c_t = sum_j a_tj h_j
  Tensor p;         // [4] p(y_t) over the target words
  int y = 0;        // the output word (index into target_words)
  Tensor s;         // [3] the new state s_t = g_U(s_{t-1}, c_t, y_{t-1})
};
struct TranslationStepExample {
  std::vector<std::string> source_words;  // "the", "cat", "sleeps"
  std::vector<std::string> target_words;  // "le", "chat", "dort", "[STOP]"
  Tensor h;                               // [S, 3] encoder hidden states h_1..h_S
  Tensor s0;                              // [3] the initial decoder state
  std::vector<TranslationStepRecord> steps;  // until [STOP]
};
TranslationStepExample translation_step_example();
std::string translation_step_text(const TranslationStepExample& ex);

// The example's text by name; throws std::invalid_argument naming the known
// examples for any other name.
std::string example_text(const std::string& name);

}  // namespace attn::decode
