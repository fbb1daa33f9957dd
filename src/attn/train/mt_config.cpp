#include "attn/train/mt_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "attn/config/object_reader.h"
#include "attn/models/kinds.h"

namespace attn::train {
namespace {

using nlohmann::json;

constexpr int64_t kMaxVocabSize = models::kMaxVocab;
// Upper bounds of the counts and sizes a config may give: far above any real
// run, so they only catch typos and values that would overflow an int.
constexpr int64_t kMaxCount = int64_t(1) << 40;   // steps, epochs, sentences, patience
constexpr int64_t kMaxTokens = int64_t(1) << 30;  // tokens or sentences per batch, pieces per sentence
// Learning rates: any value finite in fp32 (the optimizer computes in fp32). A
// rate that large makes the run diverge, which the trainer detects and reports
// (train.max_nonfinite_steps) rather than the config refusing it.
constexpr double kMaxLr = 3.4e38;
constexpr int64_t kMaxColumn = 1 << 20;           // a TSV field

// A YAML scalar as JSON: quoted -> string; else null, bool, integer, float, or string.
json scalar_to_json(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // explicitly quoted
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
  if (ec == std::errc() && p == s.data() + s.size()) return i;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  // nan, inf and 1e999 stay text: JSON has no such numbers (they would be dumped as null,
  // i.e. "use the default"), so a number field refuses them by name
  if (end && *end == '\0' && end != s.c_str() && std::isfinite(d)) return d;
  return s;
}

// The 1-based line of every key of a YAML config, by its dotted path ("model.dropout").
using KeyLines = std::map<std::string, int>;

json yaml_to_json(const YAML::Node& n, KeyLines* lines = nullptr, const std::string& prefix = "") {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar: return scalar_to_json(n);
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e, lines, prefix));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        const std::string key = kv.first.as<std::string>();
        // yaml-cpp keeps every duplicate; the last one winning silently would hide a typo'd section.
        if (o.contains(key))
          throw std::invalid_argument("line " + std::to_string(kv.first.Mark().line + 1) + ": duplicate key '" + key +
                                      "'");
        const std::string path = prefix.empty() ? key : prefix + "." + key;
        if (lines) (*lines)[path] = kv.first.Mark().line + 1;
        o[key] = yaml_to_json(kv.second, lines, path);
      }
      return o;
    }
  }
  return nullptr;
}

void apply_override(json& root, const std::string& setting) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("--set " + setting + ": expected section.key=value");
  const std::string key = setting.substr(0, eq), value = setting.substr(eq + 1);
  json* node = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) throw std::invalid_argument("--set " + setting + ": empty key part");
    if (!node->is_object()) *node = json::object();
    if (dot == std::string::npos) {
      YAML::Node v;
      try {
        v = YAML::Load(value);
      } catch (const YAML::Exception& e) {
        throw std::invalid_argument("--set " + setting + ": value is not valid YAML: " + e.what());
      }
      (*node)[part] = yaml_to_json(v);
      return;
    }
    node = &(*node)[part];
    start = dot + 1;
  }
}

DataConfig read_data(const json& j) {
  config::ObjectReader r(j, "data");
  DataConfig d;
  d.captions = r.get_string("captions", d.captions);
  d.image_root = r.get_string("image_root", d.image_root);
  d.train_src = r.get_string("train_src", d.train_src);
  d.train_tgt = r.get_string("train_tgt", d.train_tgt);
  d.train_tsv = r.get_string("train_tsv", d.train_tsv);
  d.valid_src = r.get_string("valid_src", d.valid_src);
  d.valid_tgt = r.get_string("valid_tgt", d.valid_tgt);
  d.valid_tsv = r.get_string("valid_tsv", d.valid_tsv);
  d.valid_holdout = r.get_int("valid_holdout", d.valid_holdout, 0, kMaxCount);
  d.test_holdout = r.get_int("test_holdout", d.test_holdout, 0, kMaxCount);
  d.split_seed = uint64_t(r.get_int("split_seed", int64_t(d.split_seed), 0, INT64_MAX));
  d.tsv_src_column = int(r.get_int("tsv_src_column", d.tsv_src_column, 0, kMaxColumn));
  d.tsv_tgt_column = int(r.get_int("tsv_tgt_column", d.tsv_tgt_column, 0, kMaxColumn));
  d.max_src_tokens = r.get_int("max_src_tokens", d.max_src_tokens, 1, kMaxTokens);
  d.max_tgt_tokens = r.get_int("max_tgt_tokens", d.max_tgt_tokens, 1, kMaxTokens);
  d.max_ratio = r.get_double("max_ratio", d.max_ratio, 0, 1e6);
  d.casual_source_share = r.get_double("casual_source_share", d.casual_source_share, 0, 1);
  r.finish();
  if (!d.captions.empty()) {  // captioning: the images and captions come from the one JSON
    if (!d.train_src.empty() || !d.train_tgt.empty() || !d.train_tsv.empty() || !d.valid_src.empty() ||
        !d.valid_tgt.empty() || !d.valid_tsv.empty() || d.valid_holdout > 0 || d.test_holdout > 0)
      throw std::invalid_argument("data: captions (a Karpathy split JSON with its own splits) goes without "
                                  "train_*/valid_* files and holdouts");
    return d;
  }
  if (!d.image_root.empty()) throw std::invalid_argument("data: image_root needs captions");
  const bool files = !d.train_src.empty() || !d.train_tgt.empty();
  if (files == !d.train_tsv.empty())
    throw std::invalid_argument("data: give either train_src and train_tgt, or train_tsv");
  if (files && (d.train_src.empty() || d.train_tgt.empty()))
    throw std::invalid_argument("data: train_src and train_tgt go together");
  const bool vfiles = !d.valid_src.empty() || !d.valid_tgt.empty();
  if (vfiles && (d.valid_src.empty() || d.valid_tgt.empty()))
    throw std::invalid_argument("data: valid_src and valid_tgt go together");
  if (int(vfiles) + int(!d.valid_tsv.empty()) + int(d.valid_holdout > 0) != 1)
    throw std::invalid_argument("data: give exactly one of valid_src/valid_tgt, valid_tsv or valid_holdout > 0");
  if (d.test_holdout < 0 || d.valid_holdout < 0) throw std::invalid_argument("data: holdout sizes must be >= 0");
  if (!(d.casual_source_share >= 0 && d.casual_source_share <= 1))
    throw std::invalid_argument("data.casual_source_share: " + std::to_string(d.casual_source_share) +
                                " outside [0, 1]");
  return d;
}

VocabConfig read_vocab(const json& j) {
  config::ObjectReader r(j, "vocab");
  VocabConfig v;
  v.joint = r.get_bool("joint", v.joint);
  v.size = int(r.get_int("size", v.size, 5, kMaxVocabSize));  // checked before narrowing: 4294967301 must not wrap to 5
  v.type = r.get_enum<std::string>("type", v.type, {{"unigram", "unigram"}, {"bpe", "bpe"}});
  v.character_coverage = r.get_double("character_coverage", v.character_coverage, 0, 1);
  v.src_model = r.get_string("src_model", v.src_model);
  v.tgt_model = r.get_string("tgt_model", v.tgt_model);
  r.finish();
  if (!(v.character_coverage > 0)) throw std::invalid_argument("vocab.character_coverage must be in (0, 1]");
  if (!v.joint && v.src_model.empty() != v.tgt_model.empty())
    throw std::invalid_argument("vocab: separate vocabularies need both src_model and tgt_model, or neither");
  return v;
}

TrainOptions read_train(const json& j) {
  config::ObjectReader r(j, "train");
  TrainOptions t;
  t.out_dir = r.get_string("out_dir", t.out_dir);
  t.seed = uint64_t(r.get_int("seed", int64_t(t.seed), 0, INT64_MAX));
  t.threads = int(r.get_int("threads", t.threads, 0, 4096));
  t.max_tokens = r.get_int("max_tokens", t.max_tokens, 1, kMaxTokens);
  t.max_sentences = r.get_int("max_sentences", t.max_sentences, 0, kMaxTokens);
  t.lr = r.get_double("lr", t.lr, 0, kMaxLr);
  t.beta2 = r.get_double("beta2", t.beta2, 0, 1);
  t.adam_eps = r.get_double("adam_eps", t.adam_eps, 0, 1);
  t.warmup_steps = r.get_int("warmup_steps", t.warmup_steps, 0, kMaxCount);
  t.decay_steps = r.get_int("decay_steps", t.decay_steps, 0, kMaxCount);
  t.weight_decay = r.get_double("weight_decay", t.weight_decay, 0, 10);
  t.clip = r.get_double("clip", t.clip, 0, 1e9);
  t.label_smoothing = r.get_double("label_smoothing", t.label_smoothing, 0, 1);
  t.max_epochs = r.get_int("max_epochs", t.max_epochs, 0, kMaxCount);
  t.max_steps = r.get_int("max_steps", t.max_steps, 0, kMaxCount);
  t.max_minutes = r.get_double("max_minutes", t.max_minutes, 0, 1e9);
  t.valid_every = r.get_int("valid_every", t.valid_every, 0, kMaxCount);
  t.log_every = r.get_int("log_every", t.log_every, 1, kMaxCount);
  t.checkpoint_minutes = r.get_double("checkpoint_minutes", t.checkpoint_minutes, 0, 1e9);
  t.checkpoint_every = r.get_int("checkpoint_every", t.checkpoint_every, 0, kMaxCount);
  t.max_nonfinite_steps = r.get_int("max_nonfinite_steps", t.max_nonfinite_steps, 1, kMaxCount);
  t.dist_timeout_s = r.get_double("dist_timeout_s", t.dist_timeout_s, 0.1, 1e9);
  t.dist_bucket_mb = r.get_double("dist_bucket_mb", t.dist_bucket_mb, 0.001, 1e6);
  t.metric = r.get_enum<std::string>("metric", t.metric, {{"bleu", "bleu"}, {"perplexity", "perplexity"}});
  t.lr_decay = r.get_double("lr_decay", t.lr_decay, 0, 1);
  t.lr_patience = r.get_int("lr_patience", t.lr_patience, 0, kMaxCount);
  t.min_lr = r.get_double("min_lr", t.min_lr, 0, kMaxLr);
  t.early_stop = r.get_int("early_stop", t.early_stop, 0, kMaxCount);
  t.valid_bleu_sentences = r.get_int("valid_bleu_sentences", t.valid_bleu_sentences, 0, kMaxCount);
  t.valid_beam = int(r.get_int("valid_beam", t.valid_beam, 1, 256));
  t.valid_batch_sentences = r.get_int("valid_batch_sentences", t.valid_batch_sentences, 1, kMaxTokens);
  t.snapshots = r.get_bool("snapshots", t.snapshots);
  r.finish();
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw std::invalid_argument("train." + msg);
  };
  need(!t.out_dir.empty(), "out_dir is required");
  need(t.max_tokens > 0, "max_tokens must be > 0");
  need(t.lr > 0, "lr must be > 0");
  need(t.clip >= 0, "clip must be >= 0");
  need(t.label_smoothing < 1, "label_smoothing must be in [0, 1)");
  need(t.beta2 < 1, "beta2 must be in [0, 1)");
  need(t.max_epochs > 0 || t.max_steps > 0 || t.max_minutes > 0,
       "max_epochs, max_steps and max_minutes are all 0: the run would never end");
  need(t.valid_every >= 0 && t.log_every > 0, "valid_every must be >= 0 and log_every > 0");
  need(t.checkpoint_minutes >= 0, "checkpoint_minutes must be >= 0");
  need(t.checkpoint_every >= 0, "checkpoint_every must be >= 0");
  need(t.max_nonfinite_steps >= 1, "max_nonfinite_steps must be >= 1");
  need(t.lr_decay > 0 && t.lr_decay <= 1, "lr_decay must be in (0, 1]");
  need(t.lr_patience >= 0 && t.early_stop >= 0, "lr_patience and early_stop must be >= 0");
  need(t.adam_eps > 0, "adam_eps must be > 0");
  need(t.warmup_steps == 0 || t.lr_patience == 0,
       "lr_patience must be 0 with warmup_steps > 0 (the inverse-square-root schedule sets the LR at every step)");
  need(t.decay_steps == 0 || (t.warmup_steps > 0 && t.decay_steps > t.warmup_steps),
       "decay_steps must be 0, or above warmup_steps (> 0): the linear decay follows the warm-up");
  need(t.valid_beam >= 1 && t.valid_batch_sentences >= 1, "valid_beam and valid_batch_sentences must be >= 1");
  return t;
}

}  // namespace

TrainConfig parse_train_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                               const std::string& origin) {
  json root;
  KeyLines lines;
  try {
    root = yaml_to_json(YAML::Load(yaml_text), &lines);
  } catch (const YAML::Exception& e) {
    // e.mark.line is 0-based; yaml-cpp's what() repeats it 1-based as "yaml-cpp: error at line L, column C: ..."
    throw std::invalid_argument(origin + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
                                std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(origin + ": " + e.what());
  }
  if (root.is_null()) root = json::object();
  if (!root.is_object())  // a scalar or a list: e.g. a first line without "key:"
    throw std::invalid_argument(origin + ": not a YAML mapping of sections (data:, vocab:, model:, train:), got " +
                                config::describe(root));
  try {
    for (const std::string& o : overrides) apply_override(root, o);
    config::ObjectReader r(root, "config");
    TrainConfig c;
    const json empty = json::object();
    const json* d = r.child("data");
    const json* v = r.child("vocab");
    const json* m = r.child("model");
    const json* t = r.child("train");
    r.finish();  // an unknown section first: "modle:" must not be reported as a missing model
    if (!d) throw std::invalid_argument("data: section missing (training and validation corpora)");
    c.data = read_data(*d);
    c.vocab = read_vocab(v ? *v : empty);
    c.model = models::model_config_from_json((m ? *m : empty).dump(), "model");
    c.train = read_train(t ? *t : empty);
    if (models::reads_images(c.model) != !c.data.captions.empty())
      throw std::invalid_argument(c.data.captions.empty()
                                      ? "model.type " + c.model.type + " reads images: give data.captions (a Karpathy split JSON)"
                                      : "data.captions is for captioning: set the model.type of an image model, e.g. "
                                        "show_attend_tell (not " + c.model.type + ")");
    // The whole model config now, before any corpus is read or a vocabulary trained:
    // the vocabulary sizes are not known yet, so a placeholder stands in for them.
    models::ModelConfig probe = c.model;
    probe.src_vocab = probe.tgt_vocab = std::max(c.vocab.size, 5);
    if (models::reads_images(probe)) probe.src_vocab = 0;  // a captioner has no source vocabulary
    models::validate(probe);
    return c;
  } catch (const config::FieldError& e) {
    const std::string& path = e.path();  // "config.<section>" for a section itself
    const auto line = lines.find(path.rfind("config.", 0) == 0 ? path.substr(7) : path);
    throw std::invalid_argument(origin + ": " + (line == lines.end() ? "" : "line " + std::to_string(line->second) + ": ") +
                                e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(origin + ": " + e.what());
  }
}

TrainConfig load_train_config(const std::string& yaml_path, const std::vector<std::string>& overrides) {
  std::ifstream in(yaml_path);
  if (!in) throw std::runtime_error(yaml_path + ": cannot open the config file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_train_config(ss.str(), overrides, yaml_path);
}

std::string to_json(const TrainConfig& c) {
  nlohmann::ordered_json j;
  const DataConfig& d = c.data;
  j["data"] = {{"captions", d.captions},         {"image_root", d.image_root},
               {"train_src", d.train_src},     {"train_tgt", d.train_tgt},         {"train_tsv", d.train_tsv},
               {"valid_src", d.valid_src},     {"valid_tgt", d.valid_tgt},         {"valid_tsv", d.valid_tsv},
               {"valid_holdout", d.valid_holdout}, {"test_holdout", d.test_holdout},
               {"split_seed", d.split_seed},
               {"tsv_src_column", d.tsv_src_column}, {"tsv_tgt_column", d.tsv_tgt_column},
               {"max_src_tokens", d.max_src_tokens}, {"max_tgt_tokens", d.max_tgt_tokens},
               {"max_ratio", d.max_ratio},         {"casual_source_share", d.casual_source_share}};
  const VocabConfig& v = c.vocab;
  j["vocab"] = {{"joint", v.joint}, {"size", v.size}, {"type", v.type}, {"character_coverage", v.character_coverage},
                {"src_model", v.src_model}, {"tgt_model", v.tgt_model}};
  j["model"] = nlohmann::ordered_json::parse(models::to_json(c.model));
  const TrainOptions& t = c.train;
  j["train"] = {{"out_dir", t.out_dir},
                {"seed", t.seed},
                {"threads", t.threads},
                {"max_tokens", t.max_tokens},
                {"max_sentences", t.max_sentences},
                {"lr", t.lr},
                {"beta2", t.beta2},
                {"adam_eps", t.adam_eps},
                {"warmup_steps", t.warmup_steps},
                {"decay_steps", t.decay_steps},
                {"weight_decay", t.weight_decay},
                {"clip", t.clip},
                {"label_smoothing", t.label_smoothing},
                {"max_epochs", t.max_epochs},
                {"max_steps", t.max_steps},
                {"max_minutes", t.max_minutes},
                {"valid_every", t.valid_every},
                {"log_every", t.log_every},
                {"checkpoint_minutes", t.checkpoint_minutes},
                {"checkpoint_every", t.checkpoint_every},
                {"max_nonfinite_steps", t.max_nonfinite_steps},
                {"dist_timeout_s", t.dist_timeout_s},
                {"dist_bucket_mb", t.dist_bucket_mb},
                {"metric", t.metric},
                {"lr_decay", t.lr_decay},
                {"lr_patience", t.lr_patience},
                {"min_lr", t.min_lr},
                {"early_stop", t.early_stop},
                {"valid_bleu_sentences", t.valid_bleu_sentences},
                {"valid_beam", t.valid_beam},
                {"valid_batch_sentences", t.valid_batch_sentences},
                {"snapshots", t.snapshots}};
  return j.dump(2);
}

}  // namespace attn::train
