#include "attn/serve/model_batch.h"

#include <map>
#include <memory>
#include <optional>

namespace attn::serve {

TranslateBatch model_translate_batch(const decode::TranslationModel& model, int64_t max_batch,
                                     nn::StepWeightType compute,
                                     std::shared_ptr<const decode::Shortlist> shortlist) {
  auto prepared = std::make_shared<std::map<int, std::shared_ptr<const models::PreparedDecoder>>>();  // per beam
  return [&model, max_batch, compute, prepared, shortlist](const std::vector<std::string>& texts, const BatchKey& key) {
    decode::TranslateOptions o;
    o.search.beam = key.beam;
    o.search.alignments = key.alignments;
    o.search.attention_map = key.attention_map;
    o.batch_sentences = max_batch;
    o.max_src_tokens = 0;  // the server refuses over-long texts instead (request.h)
    auto& p = (*prepared)[key.beam];
    if (!p) p = model.model->prepare_decoder(max_batch * key.beam, compute);
    o.search.prepared = p;
    o.search.shortlist = shortlist;
    return decode::translate_lines(*model.model, *model.src_vocab, *model.tgt_vocab, texts, o);
  };
}

CaptionBatch model_caption_batch(const decode::TranslationModel& model, nn::StepWeightType compute) {
  const std::optional<decode::ImageModelInput> in = decode::image_model_input(model.model->config());
  if (!in) return {};
  return [&model, in = *in, compute](const Tensor& pixels, const BatchKey& key) {
    decode::CaptionOptions o;
    o.compute = compute;
    o.beam = key.beam;
    o.attention_map = key.attention_map;
    return decode::caption_pixels(*model.model, pixels, in, o);
  };
}

}  // namespace attn::serve
