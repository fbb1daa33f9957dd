#include "attn/train/run_data.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "attn/data/line_reader.h"

namespace attn::train {
namespace {

namespace fs = std::filesystem;

void copy_file(const std::string& from, const std::string& to) {
  if (fs::exists(to) && fs::equivalent(from, to)) return;
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw std::runtime_error("cannot copy " + from + " to " + to + ": " + ec.message());
}

// The run's vocabularies as out/vocab.src.model and out/vocab.tgt.model.
void prepare_vocabs(const VocabConfig& v, const Corpora& c, const std::string& out, bool resume,
                    const PrintFn& print) {
  const std::string src_path = out + "/vocab.src.model", tgt_path = out + "/vocab.tgt.model";
  if (resume) {
    if (!fs::exists(src_path) || !fs::exists(tgt_path))
      throw std::runtime_error(out + ": cannot resume, vocabularies vocab.src.model / vocab.tgt.model missing");
    return;
  }
  if (!v.src_model.empty()) {
    copy_file(v.src_model, src_path);
    copy_file(v.joint ? v.src_model : v.tgt_model, tgt_path);
    return;
  }
  const data::VocabTrainOptions o = vocab_train_options(v);
  const auto t0 = std::chrono::steady_clock::now();
  if (v.joint) {
    data::SubwordVocab::train({&c.train.src, &c.train.tgt}, src_path, o);
    copy_file(src_path, tgt_path);
  } else {
    data::SubwordVocab::train({&c.train.src}, src_path, o);
    data::SubwordVocab::train({&c.train.tgt}, tgt_path, o);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "trained %s SentencePiece %s vocabulary of %d pieces in %.1fs", v.type.c_str(),
                v.joint ? "joint" : "separate", v.size,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  print(buf);
}

}  // namespace

data::VocabTrainOptions vocab_train_options(const VocabConfig& v) {
  data::VocabTrainOptions o;
  o.vocab_size = v.size;
  o.model = v.type == "bpe" ? data::SubwordModel::kBpe : data::SubwordModel::kUnigram;
  o.character_coverage = v.character_coverage;
  o.num_threads = 1;  // SentencePiece's result depends on its thread count: keep runs repeatable
  return o;
}

RunData prepare_run_data(const TrainConfig& cfg, bool resume, const PrintFn& print) {
  const std::string& out = cfg.train.out_dir;
  Corpora corpora = read_corpora(cfg.data);
  prepare_vocabs(cfg.vocab, corpora, out, resume, print);
  RunData d{std::move(corpora), data::SubwordVocab::load(out + "/vocab.src.model"),
            data::SubwordVocab::load(out + "/vocab.tgt.model"), {}, {}};
  if (d.src_vocab.specials() != d.tgt_vocab.specials())
    throw std::invalid_argument(out + ": vocab.src.model and vocab.tgt.model have different special ids");
  // written when the run starts; a resume (and a data-parallel run's ranks
  // other than 0, which load what rank 0 wrote as a resume does) leaves them
  if (!resume && d.corpora.test.size() > 0) {
    data::write_lines(out + "/test.src", d.corpora.test.src);
    data::write_lines(out + "/test.ref", d.corpora.test.tgt);
  }
  data::LengthFilter lf;
  lf.max_src_tokens = cfg.data.max_src_tokens;
  lf.max_tgt_tokens = cfg.data.max_tgt_tokens;
  lf.max_ratio = cfg.data.max_ratio;
  d.train = data::filter_by_length(data::encode_corpus(d.corpora.train, d.src_vocab, d.tgt_vocab), lf, &d.filtered);
  if (d.train.size() == 0) throw std::invalid_argument("data: no training pair passes the length filter");
  return d;
}

}  // namespace attn::train
