// The ids of the special tokens of a vocabulary: padding, begin and end of
// sentence, unknown. A vocabulary says what they are (data/vocab.h:
// SubwordVocab::specials()); the batcher, the models and the searches take
// them from there, never from constants of their own.
#pragma once

namespace attn::data {

struct SpecialIds {
  int pad = 0;  // fills padded positions; the embedding's zero row, ignored by the loss
  int bos = 1;  // first token of every decoder input
  int eos = 2;  // last token of every target; a search stops a hypothesis on it
  int unk = 3;  // pieces outside the vocabulary
  bool operator==(const SpecialIds&) const = default;
};

}  // namespace attn::data
