// `attn vocab`: trains a SentencePiece model (joint when given several files).
#include <cstdio>

#include "attn/cli/commands.h"
#include "attn/data/line_reader.h"
#include "attn/data/vocab.h"

namespace attn::cli {

void add_vocab_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("vocab", "train a SentencePiece subword model from corpus files (plain or gzip)");
  struct Opts {
    std::vector<std::string> inputs;
    std::string model;
    int size = 8000;
    std::string type = "unigram";
    double coverage = 1.0;
    int64_t max_sentences = 2000000;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("-i,--input", o->inputs, "corpus file(s), one sentence a line; several files give a joint model")
      ->required();
  cmd->add_option("-o,--model", o->model, "output model file, e.g. vocab.model")->required();
  cmd->add_option("--size", o->size, "pieces including <pad> <s> </s> <unk>")->capture_default_str();
  cmd->add_option("--type", o->type, "unigram or bpe")->check(CLI::IsMember({"unigram", "bpe"}))->capture_default_str();
  cmd->add_option("--character-coverage", o->coverage, "share of characters kept")->capture_default_str();
  cmd->add_option("--max-sentences", o->max_sentences, "sample at most this many sentences (0: all)")
      ->capture_default_str();
  cmd->callback([o] {
    std::vector<std::vector<std::string>> corpora;
    size_t lines = 0;
    for (const auto& f : o->inputs) {
      corpora.push_back(data::read_lines(f));
      lines += corpora.back().size();
    }
    std::vector<const std::vector<std::string>*> ptrs;
    for (const auto& c : corpora) ptrs.push_back(&c);
    data::VocabTrainOptions vo;
    vo.vocab_size = o->size;
    vo.model = o->type == "bpe" ? data::SubwordModel::kBpe : data::SubwordModel::kUnigram;
    vo.character_coverage = o->coverage;
    vo.max_sentences = o->max_sentences;
    data::SubwordVocab::train(ptrs, o->model, vo);
    std::printf("wrote %s: %s, %d pieces, from %zu lines of %zu file(s)\n", o->model.c_str(), o->type.c_str(), o->size,
                lines, o->inputs.size());
  });
}

}  // namespace attn::cli
