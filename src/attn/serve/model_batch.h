// The micro-batcher's decoding over a loaded model. Translation: decode::translate_lines
// (decode/translator.h) with attn translate's search settings (length penalty
// 1, at most 2 * source length + 5 target pieces, the best hypothesis), in
// searches of at most max_batch sentences. The decoder weights are prepared
// once per beam size, for max_batch * beam rows, and reused by every batch.
//
// Each sentence's translation does not depend on its batch-mates' words: the
// prepared weights fix the decoder step's layout and every decoder row is
// computed alone (models/rnnsearch_search.h). docs/translating-and-serving.md ("attn serve") says
// what the tests measured across batch compositions.
#pragma once
#include <cstdint>

#include "attn/decode/model_dir.h"
#include "attn/serve/batcher.h"

namespace attn::serve {

// Call the result on one thread only (the batcher's worker): it caches the
// prepared weights without a lock. `model` must outlive it. `shortlist`: the
// searches' vocabulary shortlist, or nullptr.
TranslateBatch model_translate_batch(const decode::TranslationModel& model, int64_t max_batch,
                                     nn::StepWeightType compute,
                                     std::shared_ptr<const decode::Shortlist> shortlist = nullptr);

// The captions of an image model (decode::caption_pixels with `attn caption`'s
// defaults but the beam: length penalty 1, at most 40 pieces), searched in
// `compute`, or an empty function for a text model.
CaptionBatch model_caption_batch(const decode::TranslationModel& model, nn::StepWeightType compute);

}  // namespace attn::serve
