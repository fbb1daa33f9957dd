// Subword vocabularies: a thin wrapper around SentencePiece (Kudo & Richardson
// 2018, D18-2012), Debian's libsentencepiece.
//
// Special ids: train() fixes them to
//   0 <pad>   1 <s> (BOS)   2 </s> (EOS)   3 <unk>
// (so padded batches are zero-filled); load() reads them from the model file
// (specials()) and throws when one is missing (e.g. a model trained with
// SentencePiece's defaults has no <pad>) or two coincide.
// encode() never adds BOS/EOS: the batcher does (data/batcher.h).
//
// Joint vs separate vocabularies: train() takes any number of sentence lists;
// pass source and target together for one joint model, or train twice.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/data/special_ids.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attn::data {

constexpr SpecialIds kTrainedSpecials{0, 1, 2, 3};  // what train() writes

enum class SubwordModel { kUnigram, kBpe };

struct VocabTrainOptions {
  int vocab_size = 8000;                        // pieces including the 4 specials
  SubwordModel model = SubwordModel::kUnigram;  // unigram LM or BPE
  double character_coverage = 1.0;              // share of characters kept as pieces; rarer -> <unk>
  std::string normalization = "nmt_nfkc";       // SentencePiece rule: "nmt_nfkc", "nfkc", "identity", ...
  bool byte_fallback = false;                   // unknown characters -> UTF-8 byte pieces instead of <unk>
  int64_t max_sentences = 2000000;              // sample at most this many training sentences (0 = all)
  uint32_t seed = 1;                            // SentencePiece's sampling seed
  int num_threads = 1;                          // trainer threads. Training is repeatable for a fixed
                                                // count, but the model differs between counts (measured
                                                // with 1 vs 2 on Tatoeba), so keep it fixed per experiment
};

class SubwordVocab {
public:
  // Trains a model on every sentence of every list in `corpora` and writes it
  // to `model_path` (conventionally "<name>.model"). Throws std::runtime_error
  // with SentencePiece's message when training fails (e.g. vocab_size too
  // large for the corpus), std::invalid_argument on bad options.
  static void train(const std::vector<const std::vector<std::string>*>& corpora, const std::string& model_path,
                    const VocabTrainOptions& options = {});

  // Loads a model file; throws std::runtime_error naming the path when it
  // cannot be read, or when its special ids differ from the convention above.
  static SubwordVocab load(const std::string& model_path);
  // The same from a model file's bytes already in memory (the fuzzer's entry
  // point); `name` stands for the path in error messages and path().
  static SubwordVocab load_from_bytes(std::string_view model_bytes, const std::string& name);

  SubwordVocab(SubwordVocab&&) noexcept;
  SubwordVocab& operator=(SubwordVocab&&) noexcept;
  ~SubwordVocab();

  // text -> [len] piece ids (no BOS/EOS). Text must be valid UTF-8.
  std::vector<int> encode(std::string_view text) const;
  // [len] ids -> text; pad/BOS/EOS ids decode to nothing. Throws
  // std::invalid_argument on an id outside [0, size()).
  std::string decode(const std::vector<int>& ids) const;
  // Encodes every line, in parallel (OpenMP); the result does not depend on
  // the thread count. [lines][len]
  std::vector<std::vector<int>> encode_all(const std::vector<std::string>& lines) const;

  int size() const;                        // number of pieces (ids are 0..size()-1)
  const std::string& piece(int id) const;  // e.g. "▁the"
  int id(std::string_view piece) const;    // specials().unk for an unknown piece
  const SpecialIds& specials() const { return specials_; }
  const std::string& path() const { return path_; }

private:
  SubwordVocab();
  // After SentencePiece loaded a model: takes its special ids, refusing a
  // model without all four distinct ones; returns the vocabulary.
  static SubwordVocab checked(SubwordVocab v, const std::string& name);
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
  SpecialIds specials_;
};

}  // namespace attn::data
