#include "attn/data/vocab.h"

#include "attn/tensor/safetensors.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>
#include <stdexcept>
#include <unordered_map>

namespace attn::data {

namespace {

// Feeds the in-memory sentence lists to the trainer, one after the other.
class ListIterator : public sentencepiece::SentenceIterator {
public:
  explicit ListIterator(const std::vector<const std::vector<std::string>*>& lists) : lists_(lists) { skip_empty_lists(); }
  bool done() const override { return list_ >= lists_.size(); }
  void Next() override {
    ++line_;
    skip_empty_lists();
  }
  const std::string& value() const override { return (*lists_[list_])[line_]; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }  // default-constructed: OK

private:
  void skip_empty_lists() {
    while (list_ < lists_.size() && line_ >= lists_[list_]->size()) {
      ++list_;
      line_ = 0;
    }
  }
  const std::vector<const std::vector<std::string>*>& lists_;
  size_t list_ = 0, line_ = 0;
};

}  // namespace

SubwordVocab::SubwordVocab() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
SubwordVocab::SubwordVocab(SubwordVocab&&) noexcept = default;
SubwordVocab& SubwordVocab::operator=(SubwordVocab&&) noexcept = default;
SubwordVocab::~SubwordVocab() = default;

void SubwordVocab::train(const std::vector<const std::vector<std::string>*>& corpora, const std::string& model_path,
                         const VocabTrainOptions& o) {
  if (o.vocab_size <= 4) throw std::invalid_argument("SubwordVocab::train: vocab_size must be > 4, got " + std::to_string(o.vocab_size));
  if (!(o.character_coverage > 0 && o.character_coverage <= 1))
    throw std::invalid_argument("SubwordVocab::train: character_coverage must be in (0, 1], got " +
                                std::to_string(o.character_coverage));
  size_t sentences = 0;
  for (const auto* c : corpora) {
    if (!c) throw std::invalid_argument("SubwordVocab::train: null corpus");
    sentences += c->size();
  }
  if (sentences == 0) throw std::invalid_argument("SubwordVocab::train: no training sentences");

  sentencepiece::SetRandomGeneratorSeed(o.seed);
  const std::unordered_map<std::string, std::string> args = {
      {"vocab_size", std::to_string(o.vocab_size)},
      {"model_type", o.model == SubwordModel::kBpe ? "bpe" : "unigram"},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"normalization_rule_name", o.normalization},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(o.num_threads)},
      {"pad_id", std::to_string(kTrainedSpecials.pad)},
      {"bos_id", std::to_string(kTrainedSpecials.bos)},
      {"eos_id", std::to_string(kTrainedSpecials.eos)},
      {"unk_id", std::to_string(kTrainedSpecials.unk)},
      {"minloglevel", "2"},  // errors only: training logs are long
  };
  ListIterator it(corpora);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
  if (!status.ok()) throw std::runtime_error("SubwordVocab::train: SentencePiece failed: " + status.ToString());
  write_file_atomic(model_path, proto);
}

SubwordVocab SubwordVocab::load(const std::string& model_path) {
  SubwordVocab v;
  const auto status = v.sp_->Load(model_path);
  if (!status.ok())
    throw std::runtime_error("SubwordVocab::load: cannot load '" + model_path + "': " + status.ToString());
  return checked(std::move(v), model_path);
}

SubwordVocab SubwordVocab::load_from_bytes(std::string_view model_bytes, const std::string& name) {
  SubwordVocab v;
  const auto status = v.sp_->LoadFromSerializedProto(model_bytes);
  if (!status.ok()) throw std::runtime_error("SubwordVocab::load: cannot load '" + name + "': " + status.ToString());
  return checked(std::move(v), name);
}

SubwordVocab SubwordVocab::checked(SubwordVocab v, const std::string& model_path) {
  const auto& sp = *v.sp_;
  v.specials_ = {sp.pad_id(), sp.bos_id(), sp.eos_id(), sp.unk_id()};
  const SpecialIds& s = v.specials_;
  const bool distinct = s.pad != s.bos && s.pad != s.eos && s.pad != s.unk && s.bos != s.eos && s.bos != s.unk &&
                        s.eos != s.unk;
  if (s.pad < 0 || s.bos < 0 || s.eos < 0 || s.unk < 0 || !distinct)
    throw std::runtime_error("SubwordVocab::load: '" + model_path + "' has pad/bos/eos/unk ids " +
                             std::to_string(s.pad) + "/" + std::to_string(s.bos) + "/" + std::to_string(s.eos) + "/" +
                             std::to_string(s.unk) +
                             ", but needs all four, distinct (train it with SubwordVocab::train, which uses 0/1/2/3)");
  v.path_ = model_path;
  return v;
}

std::vector<int> SubwordVocab::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw std::invalid_argument("SubwordVocab::encode: " + status.ToString());
  return ids;
}

std::string SubwordVocab::decode(const std::vector<int>& ids) const {
  const int n = size();
  for (int id : ids)
    if (id < 0 || id >= n)
      throw std::invalid_argument("SubwordVocab::decode: id " + std::to_string(id) + " outside [0, " +
                                  std::to_string(n) + ")");
  std::string text;
  const auto status = sp_->Decode(ids, &text);
  if (!status.ok()) throw std::invalid_argument("SubwordVocab::decode: " + status.ToString());
  return text;
}

std::vector<std::vector<int>> SubwordVocab::encode_all(const std::vector<std::string>& lines) const {
  std::vector<std::vector<int>> out(lines.size());
  const int64_t n = int64_t(lines.size());
  // Each line writes only its own slot, so any thread count gives the same result.
  std::string error;
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < n; ++i) {
    const auto status = sp_->Encode(lines[i], &out[i]);
    if (!status.ok()) {
#pragma omp critical
      if (error.empty()) error = "line " + std::to_string(i + 1) + ": " + status.ToString();
    }
  }
  if (!error.empty()) throw std::invalid_argument("SubwordVocab::encode_all: " + error);
  return out;
}

int SubwordVocab::size() const { return sp_->GetPieceSize(); }
const std::string& SubwordVocab::piece(int id) const {
  if (id < 0 || id >= size())
    throw std::invalid_argument("SubwordVocab::piece: id " + std::to_string(id) + " outside [0, " +
                                std::to_string(size()) + ")");
  return sp_->IdToPiece(id);
}
int SubwordVocab::id(std::string_view piece) const { return sp_->PieceToId(piece); }

}  // namespace attn::data
