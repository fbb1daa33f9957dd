// `attn shortlist RUN [-o FILE]`: the lexicon a vocabulary shortlist reads
// (`attn translate --shortlist K`, decode/shortlist.h), learnt by IBM Model 1
// (train/lexicon.h) from the run's training corpus as its train_config.json
// names it (held-out validation and test sentences stay out), in the run's
// own vocabularies. Written to RUN/shortlist.tsv by default.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "attn/cli/commands.h"
#include "attn/data/encoded_corpus.h"
#include "attn/train/corpora.h"
#include "attn/train/lexicon.h"

namespace attn::cli {

void add_shortlist_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("shortlist", "learn a run's vocabulary shortlist from its training data (IBM Model 1)");
  struct Opts {
    std::string run, out;
    train::LexiconOptions lex;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("run", o->run, "run directory written by `attn train`")->required();
  cmd->add_option("-o,--output", o->out, "lexicon file (default: RUN/shortlist.tsv)");
  cmd->add_option("--iterations", o->lex.iterations, "EM iterations of IBM Model 1")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--per-source", o->lex.per_source, "translations kept per source piece (the largest --shortlist K)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->add_option("--min-prob", o->lex.min_prob, "... with p(t|s) at least this")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->callback([o] {
    namespace fs = std::filesystem;
    const fs::path run(o->run);
    const std::string out = o->out.empty() ? (run / "shortlist.tsv").string() : o->out;
    const auto t0 = std::chrono::steady_clock::now();
    const train::TrainConfig cfg = train::load_train_config((run / "train_config.json").string());
    if (cfg.data.train_src.empty() && cfg.data.train_tsv.empty())
      throw std::invalid_argument((run / "train_config.json").string() + ": no text training corpus (data.train_src / data.train_tsv)");
    const data::SubwordVocab src_vocab = data::SubwordVocab::load((run / "vocab.src.model").string());
    const data::SubwordVocab tgt_vocab = data::SubwordVocab::load((run / "vocab.tgt.model").string());
    const train::Corpora corpora = train::read_corpora(cfg.data);
    const data::EncodedCorpus encoded = data::encode_corpus(corpora.train, src_vocab, tgt_vocab);
    const decode::Lexicon lex = train::learn_lexicon(encoded, src_vocab.size(), tgt_vocab.size(), o->lex);
    int64_t entries = 0;
    for (const auto& list : lex.best) entries += int64_t(list.size());
    const std::string source = cfg.data.train_tsv.empty() ? cfg.data.train_src + " / " + cfg.data.train_tgt : cfg.data.train_tsv;
    write_lexicon(out, lex, src_vocab, tgt_vocab,
                  {"attn vocabulary shortlist: IBM Model 1, " + std::to_string(o->lex.iterations) + " EM iterations",
                   "training corpus: " + source + " (" + std::to_string(encoded.size()) + " pairs)",
                   "at most " + std::to_string(o->lex.per_source) + " translations per source piece with p(t|s) >= " +
                       std::to_string(o->lex.min_prob)});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %jd pairs, %jd source pieces x translations, %zu frequent target pieces (%.1f s)\n", out.c_str(),
                std::intmax_t(encoded.size()), std::intmax_t(entries), lex.frequent.size(), s);
  });
}

}  // namespace attn::cli
