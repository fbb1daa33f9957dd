// Writes the binary seeds of fuzz/corpus: for the safetensors target a model
// file of the tiny model (tiny_model.h) and a checkpoint of it, its three
// files joined by the target's separator; for the vocab target two tiny
// SentencePiece models (unigram, bpe) trained by SubwordVocab::train, what
// `attn vocab` runs, on a few lines, with the "identity" normalization: the
// default nmt_nfkc rule table alone is 237 KB, too big a seed to mutate fast.
// Usage: fuzz_make_seeds CORPUS_DIR   (CORPUS_DIR: fuzz/corpus)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attn/data/vocab.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/random.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optim.h"
#include "tiny_model.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error(path + ": write failed");
}

void write_vocab_seeds(const std::string& dir, const std::string& scratch) {
  using namespace attn::data;
  const std::vector<std::string> lines = {"A man rides a horse.", "Two dogs play in the snow.",
                                          "Un homme monte à cheval.", "Deux chiens jouent dans la neige.",
                                          "Ça va? Très bien, merci.", "東京は大きい。"};
  for (SubwordModel model : {SubwordModel::kUnigram, SubwordModel::kBpe}) {
    VocabTrainOptions o;
    o.model = model;
    o.vocab_size = 52;
    o.normalization = "identity";
    const std::string name = model == SubwordModel::kBpe ? "bpe.model" : "unigram.model";
    SubwordVocab::train({&lines}, scratch + "/" + name, o);
    write_file(dir + "/" + name, read_file(scratch + "/" + name));
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attn;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  const std::string out = std::string(argv[1]) + "/safetensors";
  const std::string scratch = std::filesystem::temp_directory_path() / "attn-make-seeds";
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  const models::ModelConfig config = fuzz::tiny_config();
  Rng init(1);
  auto model = models::make_model(config, init, 2);
  train::save_model(scratch + "/model.safetensors", *model, models::to_json(config));
  write_file(out + "/model.safetensors", read_file(scratch + "/model.safetensors"));

  train::Adam adam(model->named_parameters());
  train::CheckpointSave what;
  what.model = model.get();
  what.config_json = models::to_json(config);
  what.optimizer = &adam;
  what.trainer.step = 3;
  train::save_checkpoint(scratch + "/ckpt", what);
  const std::string sep = "\n@@file@@\n";
  write_file(out + "/checkpoint", read_file(scratch + "/ckpt/model.safetensors") + sep +
                                      read_file(scratch + "/ckpt/trainer_state.json") + sep +
                                      read_file(scratch + "/ckpt/optimizer.safetensors"));
  write_vocab_seeds(std::string(argv[1]) + "/vocab", scratch);
  std::filesystem::remove_all(scratch);
  return 0;
}
