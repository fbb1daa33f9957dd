// Fuzz target: model files and training checkpoints (tensor/safetensors.*,
// nn/load_params.*, train/checkpoint*.cpp).
//
// Input without the separator "\n@@file@@\n": a model file's bytes, parsed
// in memory (parse_safetensors), loaded by name into a tiny rnnsearch model
// (nn::load_into_params) and its config metadata read as a model config.
// With separators: a checkpoint directory, parts in this order:
// model.safetensors, trainer_state.json, optimizer.safetensors, written to a
// scratch directory and read by train::load_checkpoint into the same model
// and an Adam optimizer.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "attn/models/config.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/load_params.h"
#include "attn/tensor/random.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optim.h"
#include "fuzz_input.h"
#include "tiny_model.h"

namespace {

using namespace attn;

struct Target {
  Rng init{1};
  std::unique_ptr<models::Seq2SeqModel> model = models::make_model(fuzz::tiny_config(), init, 2);
  train::Adam adam{model->named_parameters()};
  std::string dir;
  Target() {
    char tmpl[] = "/tmp/attn-fuzz-ckpt-XXXXXX";
    if (!::mkdtemp(tmpl)) std::abort();
    dir = tmpl;
  }
  ~Target() { std::filesystem::remove_all(dir); }
};

Target& target() {
  static Target t;
  return t;
}

void write(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

void model_file(std::string_view bytes) {
  SafetensorsFile f = parse_safetensors(bytes, "model.safetensors");
  nn::load_into_params(f, target().model->named_parameters());
  auto cfg = f.metadata.find("config");
  if (cfg != f.metadata.end()) {
    models::ModelConfig c = models::model_config_from_json(cfg->second, "config");
    models::validate(c);
    (void)models::min_parameter_count(c);
  }
}

void checkpoint(const std::vector<std::string_view>& parts) {
  Target& t = target();
  const char* names[] = {"model.safetensors", "trainer_state.json", "optimizer.safetensors"};
  for (size_t i = 0; i < 3; ++i) {
    const std::string path = t.dir + "/" + names[i];
    if (i < parts.size())
      write(path, parts[i]);
    else
      std::filesystem::remove(path);
  }
  train::LoadedCheckpoint loaded = train::load_checkpoint(t.dir, {t.model.get(), &t.adam});
  (void)loaded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_view(data, size);
  const auto parts = fuzz::split_parts(input, "\n@@file@@\n");
  try {
    if (parts.size() == 1)
      model_file(input);
    else
      checkpoint(parts);
  } catch (const std::exception&) {
    // a refused file: what we want from bad input
  }
  return 0;
}
