#include "attn/models/config.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "attn/config/object_reader.h"
#include "attn/models/kinds.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, TiedEmbeddings>> kTied = {
    {"none", TiedEmbeddings::None}, {"decoder", TiedEmbeddings::Decoder}, {"all", TiedEmbeddings::All}};

std::string type_name(const std::type_info& t) {
  int status = 0;
  char* s = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && s ? s : t.name();
  std::free(s);
  return out;
}

// model.type: one of the table's names (the error lists them)
std::string read_type(config::ObjectReader& r, const nlohmann::json& j, const std::string& path) {
  const std::vector<std::string> names = model_kind_names();
  if (j.contains("type") && !j.at("type").is_null()) {
    const nlohmann::json& v = j.at("type");
    if (!v.is_string() || std::find(names.begin(), names.end(), v.get<std::string>()) == names.end()) {
      std::string allowed;
      for (const std::string& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
      throw config::FieldError("type", path + ".type: expected one of " + allowed + ", got " + config::describe(v),
                               path + ".type");
    }
  }
  return r.get_string("type", ModelConfig{}.type);
}

}  // namespace

void throw_wrong_section(const std::string& type, const KindConfig* have, const std::type_info& want) {
  throw std::logic_error("model config of type " + type + ": its section is " +
                         (have ? type_name(typeid(*have)) : std::string("empty")) + ", not " + type_name(want));
}

const char* name(TiedEmbeddings t) {
  for (const auto& [n, v] : kTied)
    if (v == t) return n.c_str();
  return "?";
}

void require_field(bool ok, const std::string& field, const std::string& msg) {
  if (!ok) throw config::FieldError(field, "model config: " + msg, "model." + field);
}

int64_t min_parameter_count(const ModelConfig& c) { return model_kind(c.type).min_parameter_count(c); }

void validate(const ModelConfig& c) {
  const ModelKind& kind = model_kind(c.type);
  const bool images = kind.input == ModelInput::Images;
  if (images)
    require_field(c.src_vocab == 0, "src_vocab", c.type + " reads images: src_vocab must be 0, got " +
                                                     std::to_string(c.src_vocab));
  else
    require_field(c.src_vocab > 4, "src_vocab", "src_vocab " + std::to_string(c.src_vocab) + " must be > 4 (4 special ids)");
  require_field(c.tgt_vocab > 4, "tgt_vocab", "tgt_vocab " + std::to_string(c.tgt_vocab) + " must be > 4 (4 special ids)");
  require_field(c.embed > 0, "embed", "embed = " + std::to_string(c.embed) + " must be > 0");
  // Upper bounds so that a lying config is refused before the model is allocated
  // (their products stay far from int64 overflow).
  require_field(c.src_vocab <= kMaxVocab && c.tgt_vocab <= kMaxVocab, c.src_vocab > kMaxVocab ? "src_vocab" : "tgt_vocab",
                "vocabulary size above the limit of " + std::to_string(kMaxVocab));
  require_field(c.embed <= kMaxWidth, "embed", "embed = " + std::to_string(c.embed) + " above the limit of " +
                                                   std::to_string(kMaxWidth));
  require_field(c.dropout >= 0 && c.dropout < 1, "dropout", "dropout " + std::to_string(c.dropout) + " outside [0, 1)");
  const int64_t smaller_vocab = images ? c.tgt_vocab : std::min(c.src_vocab, c.tgt_vocab);
  for (auto [n, id] : {std::pair<const char*, int>{"pad_id", c.specials.pad}, {"bos_id", c.specials.bos},
                       {"eos_id", c.specials.eos}, {"unk_id", c.specials.unk}})
    require_field(id >= 0 && id < smaller_vocab, n, std::string(n) + " = " + std::to_string(id) + " outside [0, " +
                                                         std::to_string(smaller_vocab) + ")");
  if (c.tied_embeddings == TiedEmbeddings::All) {
    require_field(!images, "tied_embeddings", c.type + " has no source embedding: tied_embeddings none or decoder");
    require_field(c.src_vocab == c.tgt_vocab, "tied_embeddings",
                  "tied_embeddings: all needs one joint vocabulary (src_vocab " + std::to_string(c.src_vocab) +
                      " != tgt_vocab " + std::to_string(c.tgt_vocab) + ")");
  }
  kind.validate(c);
}

std::string to_json(const ModelConfig& c) {
  const ModelKind& kind = model_kind(c.type);
  nlohmann::ordered_json j;
  j["type"] = c.type;
  j["src_vocab"] = c.src_vocab;
  j["tgt_vocab"] = c.tgt_vocab;
  j["embed"] = c.embed;
  kind.write(c, j);  // the kind's own fields
  j["dropout"] = c.dropout;
  j["tied_embeddings"] = name(c.tied_embeddings);
  j["pad_id"] = c.specials.pad;
  j["bos_id"] = c.specials.bos;
  j["eos_id"] = c.specials.eos;
  j["unk_id"] = c.specials.unk;
  return j.dump();
}

ModelConfig model_config_from_json(const std::string& json_text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": not valid JSON: " + config::parse_error_text(e));
  }
  config::ObjectReader r(j, path);
  ModelConfig c;
  c.type = read_type(r, j, path);
  c.src_vocab = r.get_int("src_vocab", c.src_vocab);
  c.tgt_vocab = r.get_int("tgt_vocab", c.tgt_vocab);
  c.embed = r.get_int("embed", c.embed);
  model_kind(c.type).read(r, j, c);  // fills c.kind
  c.dropout = r.get_double("dropout", c.dropout);
  c.tied_embeddings = r.get_enum("tied_embeddings", c.tied_embeddings, kTied);
  c.specials.pad = int(r.get_int("pad_id", c.specials.pad, 0, kMaxVocab));
  c.specials.bos = int(r.get_int("bos_id", c.specials.bos, 0, kMaxVocab));
  c.specials.eos = int(r.get_int("eos_id", c.specials.eos, 0, kMaxVocab));
  c.specials.unk = int(r.get_int("unk_id", c.specials.unk, 0, kMaxVocab));
  r.finish();
  return c;
}

}  // namespace attn::models
