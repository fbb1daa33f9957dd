#include "attn/serve/request.h"

#include <set>

#include "attn/config/object_reader.h"

namespace attn::serve {
namespace {

nlohmann::json parse_object(const std::string& body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);  // also rejects strings that are not valid UTF-8
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400): both the body's fault
    throw RequestError("", std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) throw RequestError("", "the body must be a JSON object, got " + config::describe(j));
  return j;
}

int read_in_range(config::ObjectReader& r, const std::string& key, int dflt, int lo, int hi) {
  const int64_t v = r.get_int(key, dflt);
  if (v < lo || v > hi)
    throw RequestError(key, "request." + key + ": must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + std::to_string(v));
  return int(v);
}

std::string read_text(const nlohmann::json& v) {
  if (!v.is_string()) throw RequestError("text", "request.text: expected a string, got " + config::describe(v));
  return v.get<std::string>();
}

std::vector<std::string> read_texts(const nlohmann::json& v, int64_t max_texts) {
  if (!v.is_array()) throw RequestError("texts", "request.texts: expected a list of strings, got " + config::describe(v));
  if (v.empty()) throw RequestError("texts", "request.texts: the list is empty");
  if (int64_t(v.size()) > max_texts)
    throw RequestError("texts", "request.texts: " + std::to_string(v.size()) + " texts, over the limit of " +
                                    std::to_string(max_texts) + " per request");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw RequestError("texts", "request.texts[" + std::to_string(i) + "]: expected a string, got " + config::describe(v[i]));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// Query parameters read one by one, then finish() refuses any left over (an
// unknown name) or repeated. Values are strict: "3", not "3.0" or " 3".
class QueryReader {
public:
  explicit QueryReader(const QueryParams& params) : params_(params) {}

  int get_int(const std::string& key, int dflt, int lo, int hi) {
    const std::string* v = value(key);
    if (!v) return dflt;
    const bool digits = !v->empty() && v->size() <= 9 && v->find_first_not_of("0123456789") == std::string::npos;
    const long n = digits ? std::stol(*v) : -1;
    if (!digits || n < lo || n > hi)
      throw RequestError(key, "query." + key + ": must be a whole number in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "], got " + config::describe_text(*v));
    return int(n);
  }

  std::string get_string(const std::string& key) {
    const std::string* v = value(key);
    return v ? *v : std::string();
  }

  bool get_bool(const std::string& key, bool dflt) {
    const std::string* v = value(key);
    if (!v) return dflt;
    if (*v == "true" || *v == "1") return true;
    if (*v == "false" || *v == "0") return false;
    throw RequestError(key, "query." + key + ": must be true or false, got " + config::describe_text(*v));
  }

  void finish() const {
    for (const auto& [key, v] : params_)
      if (!read_.count(key)) {
        std::string known;
        for (const std::string& k : read_) known += (known.empty() ? "" : ", ") + k;
        throw RequestError(key, "query: unknown parameter " + config::describe_text(key) + " (known: " + known + ")");
      }
  }

private:
  const std::string* value(const std::string& key) {
    read_.insert(key);
    if (params_.count(key) > 1) throw RequestError(key, "query." + key + ": given more than once");
    const auto it = params_.find(key);
    return it == params_.end() ? nullptr : &it->second;
  }

  const QueryParams& params_;
  std::set<std::string> read_;
};

}  // namespace

CaptionRequest parse_caption_query(const QueryParams& params, const RequestLimits& limits) {
  QueryReader q(params);
  CaptionRequest r;
  r.beam = q.get_int("beam", r.beam, 1, limits.max_beam);
  r.attention_map = q.get_string("attention_map");
  q.finish();
  return r;
}

nlohmann::json parse_image_explain_query(const QueryParams& params, const RequestLimits& limits) {
  QueryReader q(params);
  nlohmann::json out;
  out["beam"] = q.get_int("beam", 1, 1, limits.max_beam);
  out["top_k"] = q.get_int("top_k", 5, 1, limits.max_top_k);
  out["words"] = q.get_bool("words", false);
  out["attention_map"] = q.get_string("attention_map");
  q.finish();
  return out;
}

TranslateRequest parse_translate_request(const std::string& body, const RequestLimits& limits) {
  const nlohmann::json j = parse_object(body);
  TranslateRequest req;
  try {
    config::ObjectReader r(j, "request");
    const nlohmann::json* text = r.child("text");
    const nlohmann::json* texts = r.child("texts");
    if (text && texts) throw RequestError("texts", "request: give \"text\" (one sentence) or \"texts\" (a list), not both");
    if (!text && !texts) throw RequestError("text", "request.text: missing (or \"texts\": a list of sentences)");
    req.many = texts != nullptr;
    req.texts = req.many ? read_texts(*texts, limits.max_texts) : std::vector<std::string>{read_text(*text)};
    req.beam = read_in_range(r, "beam", req.beam, 1, limits.max_beam);
    req.alignments = r.get_bool("alignments", req.alignments);
    req.attention_map = r.get_string("attention_map", req.attention_map);
    r.finish();
  } catch (const config::FieldError& e) {
    throw RequestError(e.key(), e.what());
  }
  return req;
}

nlohmann::json parse_explain_request(const std::string& body, const RequestLimits& limits) {
  const nlohmann::json j = parse_object(body);
  nlohmann::json out;
  try {
    config::ObjectReader r(j, "request");
    const nlohmann::json* text = r.child("text");
    if (!text) throw RequestError("text", "request.text: missing (the sentence to explain)");
    const std::string t = read_text(*text);
    if (t.find_first_not_of(" \t\r\n") == std::string::npos)
      throw RequestError("text", "request.text: empty (nothing to explain)");
    out["text"] = t;
    out["beam"] = read_in_range(r, "beam", 1, 1, limits.max_beam);
    out["top_k"] = read_in_range(r, "top_k", 5, 1, limits.max_top_k);
    out["words"] = r.get_bool("words", false);
    out["attention_map"] = r.get_string("attention_map", "");
    out["self_attention_map"] = r.get_string("self_attention_map", "");
    r.finish();
  } catch (const config::FieldError& e) {
    throw RequestError(e.key(), e.what());
  }
  return out;
}

void check_src_pieces(const std::vector<std::string>& texts, const std::string& field, const data::SubwordVocab& vocab,
                      const RequestLimits& limits) {
  for (size_t i = 0; i < texts.size(); ++i) {
    const size_t pieces = vocab.encode(texts[i]).size();
    if (int64_t(pieces) <= limits.max_src_pieces) continue;
    const std::string which = field == "texts" ? "texts[" + std::to_string(i) + "]" : field;
    throw RequestError(field, "request." + which + ": " + std::to_string(pieces) + " source pieces, over the limit of " +
                                  std::to_string(limits.max_src_pieces) + " (--max-src-pieces)");
  }
}

}  // namespace attn::serve
