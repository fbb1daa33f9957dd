// The configuration of a model: the fields every model kind shares, and the
// kind's own fields in a section of its own (its struct, in its folder:
// models/<kind>/<kind>_config.h). Read from the `model:` section of a
// training config (YAML, via JSON) and stored as JSON inside every model
// file, so a model directory alone says how to rebuild its network. The file
// format stays one flat object: the kind's keys sit beside the common ones.
//
//   type                            a name in the table of kinds (models/kinds.h):
//                                   rnnsearch | luong | show_attend_tell | transformer, or a registered kind
//   src_vocab, tgt_vocab            set by the trainer from the vocabularies (0: a kind that reads images)
//   embed                           E, word embedding size (source and target)
//   dropout                         on embeddings, between layers and before the output
//   tied_embeddings: none | decoder | all   share the output projection with the target
//                                   embedding (decoder), and also the source embedding (all, joint vocab)
//   pad_id, bos_id, eos_id, unk_id  the vocabularies' special ids (set by the trainer from them)
// The kinds' own keys: models/rnn/rnn_config.h (the RNN encoder-decoder fields rnnsearch and
// luong share), models/rnnsearch/rnnsearch_config.h, models/luong/luong_config.h,
// models/show_attend_tell/show_attend_tell_config.h, models/transformer/transformer_config.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <typeinfo>

#include "attn/data/special_ids.h"

namespace attn::models {

enum class TiedEmbeddings { None, Decoder, All };

// A kind's own fields: its struct derives from KindConfig (directly or
// through a shared section such as RnnConfig) and clones itself.
struct KindConfig {
  virtual ~KindConfig() = default;
  virtual std::unique_ptr<KindConfig> clone() const = 0;
};

// The section a ModelConfig holds, with value semantics (a copy clones it).
class KindSection {
public:
  KindSection() = default;
  explicit KindSection(std::unique_ptr<KindConfig> p) : p_(std::move(p)) {}
  KindSection(const KindSection& o) : p_(o.p_ ? o.p_->clone() : nullptr) {}
  KindSection& operator=(const KindSection& o) {
    if (this != &o) p_ = o.p_ ? o.p_->clone() : nullptr;
    return *this;
  }
  KindSection(KindSection&&) noexcept = default;
  KindSection& operator=(KindSection&&) noexcept = default;
  KindConfig* get() const { return p_.get(); }

private:
  std::unique_ptr<KindConfig> p_;
};

// Throws std::logic_error naming the model type, the section it holds and the one asked for.
[[noreturn]] void throw_wrong_section(const std::string& type, const KindConfig* have, const std::type_info& want);

struct ModelConfig {
  std::string type = "rnnsearch";         // a name in the table of kinds (models/kinds.h)
  int64_t src_vocab = 0;                  // source vocabulary size (> 4; set from the vocabulary; 0 for images)
  int64_t tgt_vocab = 0;                  // target vocabulary size (> 4)
  int64_t embed = 256;                    // E: embedding size
  double dropout = 0.2;                   // dropout probability in training
  TiedEmbeddings tied_embeddings = TiedEmbeddings::None;  // weight sharing, see the file comment
  data::SpecialIds specials;              // padding (embedding zero row, ignored by the loss), BOS, EOS, UNK
  KindSection kind;                       // the kind's own fields (empty in a default-constructed config:
                                          // models::model_config(type) makes a whole one)

  // The kind's section as T (its own struct, or a shared base such as RnnConfig);
  // throws std::logic_error when the config holds another kind's.
  template <class T>
  T& section() {
    if (T* t = dynamic_cast<T*>(kind.get())) return *t;
    throw_wrong_section(type, kind.get(), typeid(T));
  }
  template <class T>
  const T& section() const {
    if (const T* t = dynamic_cast<const T*>(kind.get())) return *t;
    throw_wrong_section(type, kind.get(), typeid(T));
  }
};

// Throws std::invalid_argument naming the field when a value is out of range
// or a combination is not supported (e.g. tied embeddings with readout != embed):
// the common fields here, the kind's through the table of kinds. Also bounds
// every size (kMaxVocab, kMaxWidth, kMaxLayers) so that a lying config is
// refused before anything is allocated from it.
void validate(const ModelConfig& c);
constexpr int64_t kMaxVocab = int64_t(1) << 22;
constexpr int64_t kMaxWidth = int64_t(1) << 15;
constexpr int64_t kMaxLayers = 64;

// Throws "model config: <msg>" as a config::FieldError (an std::invalid_argument)
// naming `field` unless ok: a training config's YAML reader finds the key's
// line by "model.<field>". For the kinds' validators.
void require_field(bool ok, const std::string& field, const std::string& msg);

// A lower bound on the parameter count a validated config implies (the
// embeddings, the first encoder layer's input weights, the decoder's
// recurrent weights: the kind says), computed without allocating: a loader compares it with
// the file's element count and refuses a config claiming more than the file holds.
int64_t min_parameter_count(const ModelConfig& c);

// JSON object text <-> config. from_json checks types and rejects unknown keys
// naming them ("<path>.<key>: unknown key"); it does not validate() (the
// trainer fills in the vocabulary sizes first). `path` prefixes error messages.
// to_json writes the common fields and the kind's own.
std::string to_json(const ModelConfig& c);
ModelConfig model_config_from_json(const std::string& json_text, const std::string& path = "model");

const char* name(TiedEmbeddings t);

}  // namespace attn::models
