// `attn demo`: attention learning to translate, in about a minute. Generates
// the toy task of data/toy_tasks.h (word-by-word translation with the word
// order reversed), trains a small rnnsearch model on it with the real trainer
// (the same code as `attn train`), then translates held-out sentences and
// shows which source word each output word attended to.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "attn/cli/commands.h"
#include "attn/cli/search_options.h"
#include "attn/data/line_reader.h"
#include "attn/data/toy_tasks.h"
#include "attn/decode/alignment.h"
#include "attn/decode/translator.h"
#include "attn/eval/bleu.h"
#include "attn/decode/model_dir.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/mt_trainer.h"

namespace attn::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = ".attn-demo";  // a folder holding this file is the demo's own to replace

// The demo's training config: a small rnnsearch on the toy corpora in dir/data.
std::string demo_config(const std::string& dir, int64_t epochs, int threads, uint64_t seed) {
  return "data:\n"
         "  train_src: " + dir + "/data/train.en\n"
         "  train_tgt: " + dir + "/data/train.fr\n"
         "  valid_src: " + dir + "/data/valid.en\n"
         "  valid_tgt: " + dir + "/data/valid.fr\n"
         "vocab:\n"
         "  size: 80\n"
         "model:\n"
         "  type: rnnsearch\n"
         "  embed: 32\n"
         "  encoder_hidden: 32\n"
         "  decoder_hidden: 64\n"
         "  attention: 32\n"
         "  readout: 32\n"
         "  dropout: 0.1\n"
         "train:\n"
         "  out_dir: " + dir + "/run\n"
         "  max_tokens: 800\n"
         "  lr: 0.003\n"
         "  lr_patience: 2\n"
         "  valid_every: 0\n"
         "  log_every: 50\n"
         "  max_epochs: " + std::to_string(epochs) + "\n"
         "  threads: " + std::to_string(threads) + "\n"
         "  seed: " + std::to_string(seed) + "\n";
}

// A fresh demo folder: refuses a folder the demo did not make.
void prepare_folder(const std::string& dir) {
  if (fs::exists(dir) && !fs::is_empty(dir) && !fs::exists(dir + "/" + kMarker))
    throw CLI::ValidationError("--out", dir + " exists and was not made by attn demo; choose another folder");
  fs::remove_all(dir);
  fs::create_directories(dir + "/data");
  write_file_atomic(dir + "/" + kMarker, "made by attn demo; rerunning the demo replaces this folder\n");
}

void write_corpus(const std::string& stem, int64_t n, uint64_t seed) {
  const data::ParallelCorpus c = data::reversal_corpus(n, seed);
  data::write_lines(stem + ".en", c.src);
  data::write_lines(stem + ".fr", c.tgt);
}

// "deux<-two chat<-cat rouge<-red .<-.": each output word, in order, with the
// source word that got the most attention weight over the word's pieces.
std::string attended_words(const decode::Translation& t) {
  const decode::TranslatedHypothesis& h = t.hypotheses.at(0);
  const std::vector<int> sw = decode::piece_words(t.src_pieces), tw = decode::piece_words(h.pieces);
  const size_t S = t.src_pieces.size();
  std::vector<std::string> src_words(size_t(sw.back() + 1)), tgt_words(size_t(tw.back() + 1));
  for (size_t i = 0; i < S; ++i) src_words[size_t(sw[i])] += t.src_pieces[i];
  for (size_t j = 0; j < h.pieces.size(); ++j) tgt_words[size_t(tw[j])] += h.pieces[j];
  std::vector<std::vector<double>> weight(tgt_words.size(), std::vector<double>(src_words.size(), 0.0));
  for (size_t j = 0; j < h.pieces.size(); ++j)  // rows of h.attention: one per target piece (then EOS)
    for (size_t i = 0; i < S; ++i) weight[size_t(tw[j])][size_t(sw[i])] += h.attention[j * S + i];
  auto word = [](std::string w) { return w.rfind("\xe2\x96\x81", 0) == 0 ? w.substr(3) : w; };  // drop "▁"
  std::string out;
  for (size_t j = 0; j < tgt_words.size(); ++j) {
    const auto& row = weight[j];
    const size_t best = size_t(std::max_element(row.begin(), row.end()) - row.begin());
    out += word(tgt_words[j]) + "<-" + word(src_words[best]) + " ";
  }
  return out;
}

void show_results(const std::string& run_dir) {
  const decode::TranslationModel tm = decode::load_translation_model(run_dir);
  const data::ParallelCorpus test = data::reversal_corpus(200, 3);
  decode::TranslateOptions o;
  o.search.alignments = true;
  const auto tr = decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, test.src, o);
  std::vector<std::string> hyps;
  int64_t exact = 0;
  for (size_t i = 0; i < tr.size(); ++i) {
    hyps.push_back(tr[i].hypotheses.empty() ? "" : tr[i].hypotheses[0].text);
    exact += hyps.back() == test.tgt[i];
  }
  std::printf("\nheld-out sentences (greedy): source -> output, and the source word each output word attended to\n");
  for (size_t i = 0; i < 5; ++i)
    std::printf("  %s -> %s %s\n      %s\n", test.src[i].c_str(), hyps[i].c_str(),
                hyps[i] == test.tgt[i] ? "(right)" : ("(expected " + test.tgt[i] + ")").c_str(),
                attended_words(tr[i]).c_str());
  std::printf("exact translations: %lld of %zu; BLEU %.2f\n", (long long)exact, tr.size(),
              eval::corpus_bleu(hyps, {test.tgt}).score);
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "train a small attention model to translate with the word order reversed");
  struct Opts {
    std::string out = "runs/demo";
    int64_t epochs = 5;
    int threads = 0;
    uint64_t seed = 1;
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--out", o->out, "folder for the generated data and the run (replaced on every demo)")
      ->capture_default_str();
  cmd->add_option("--epochs", o->epochs, "training epochs over 3000 generated pairs")->capture_default_str();
  add_threads_option(*cmd, o->threads);
  cmd->add_option("--seed", o->seed, "random seed of the model and the data order")->capture_default_str();
  cmd->add_option("--set", o->sets, "override a config value: section.key=value (repeatable)");
  cmd->callback([o] {
    prepare_folder(o->out);
    write_corpus(o->out + "/data/train", 3000, 1);
    write_corpus(o->out + "/data/valid", 100, 2);
    std::printf("attn demo: English -> French with the word order reversed (\"red cat two .\" -> \"deux chat rouge .\"),\n"
                "3000 generated training pairs in %s/data; an rnnsearch model (bidirectional GRU encoder, additive\n"
                "attention, GRU decoder) learns it with the same trainer as `attn train`.\n\n",
                o->out.c_str());
    const train::TrainConfig cfg =
        train::parse_train_config(demo_config(o->out, o->epochs, o->threads, o->seed), o->sets, "attn demo");
    train::train_translation(cfg);
    show_results(cfg.train.out_dir);
  });
}

}  // namespace attn::cli
