#include "attn/decode/model_dir.h"

#include <filesystem>
#include <stdexcept>

#include "attn/models/kinds.h"
#include "attn/nn/load_params.h"
#include "attn/tensor/safetensors.h"

namespace attn::decode {

TranslationModel load_model_dir(const std::string& dir, const std::string& weights) {
  const std::string path = weights.empty() ? dir + "/model.safetensors" : weights;
  if (!std::filesystem::exists(path))
    throw std::runtime_error(path + ": no model file (train one with `attn train`, which keeps the best model there)");
  SafetensorsFile file = load_safetensors(path);
  auto cfg = file.metadata.find("config");
  if (cfg == file.metadata.end()) throw std::runtime_error(path + ": no model config in the file's metadata");
  models::ModelConfig c;
  try {
    c = models::model_config_from_json(cfg->second, "model");
    models::validate(c);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  // The config must not claim more weights than the file holds: checked before
  // the model is allocated from it (a lying config would allocate gigabytes).
  int64_t in_file = 0;
  for (const auto& [name, t] : file.tensors) in_file += t.numel();  // bounded by the file's size
  if (models::min_parameter_count(c) > in_file)
    throw std::runtime_error(path + ": the model config implies at least " +
                             std::to_string(models::min_parameter_count(c)) + " weights, the file holds " +
                             std::to_string(in_file));
  TranslationModel tm;
  tm.tgt_vocab = std::make_unique<data::SubwordVocab>(data::SubwordVocab::load(dir + "/vocab.tgt.model"));
  if (!models::reads_images(c))  // a captioner's run has no source vocabulary
    tm.src_vocab = std::make_unique<data::SubwordVocab>(data::SubwordVocab::load(dir + "/vocab.src.model"));
  const int src_size = tm.src_vocab ? tm.src_vocab->size() : 0;
  if (src_size != c.src_vocab || tm.tgt_vocab->size() != c.tgt_vocab)
    throw std::runtime_error(dir + ": vocabularies of " + std::to_string(src_size) + "/" +
                             std::to_string(tm.tgt_vocab->size()) + " pieces, the model expects " +
                             std::to_string(c.src_vocab) + "/" + std::to_string(c.tgt_vocab));
  Rng init(0);
  tm.model = models::make_model(c, init, 0);
  nn::load_into_params(file, tm.model->named_parameters());
  tm.model->train(false);
  return tm;
}

TranslationModel load_translation_model(const std::string& dir, const std::string& weights) {
  TranslationModel tm = load_model_dir(dir, weights);
  if (models::reads_images(tm.model->config()))
    throw std::runtime_error(dir + ": a captioning model (" + tm.model->config().type +
                             ") reads images, not text");
  return tm;
}

}  // namespace attn::decode
