// Reading configuration objects strictly: typed fields with defaults, and every
// key that nobody asked for rejected by name. Internal to the library (the
// public configs are plain structs): the model config (models/config.cpp, JSON),
// the training config (train/mt_config.cpp, YAML converted to JSON) and the
// HTTP server's request bodies (serve/request.cpp) read with it, so it sits below
// them all; it depends on nothing in attn (nlohmann-json).
//
// Usage:
//   ObjectReader r(json, "model");            // throws unless json is an object
//   cfg.embed = r.get_int("embed", cfg.embed);
//   r.finish();                               // throws "model.embd: unknown key (known: ...)"
#pragma once
#include <cmath>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attn/config/json_number.h"

namespace attn::config {

// What ObjectReader throws: a std::invalid_argument that also names the key
// (the HTTP server answers with it as the error's "field").
class FieldError : public std::invalid_argument {
public:
  // `path`: the key with its enclosing objects ("model.dropout"), by which a
  // YAML config finds the key's line; the key itself when not given.
  FieldError(std::string key, const std::string& message, std::string path = "")
      : std::invalid_argument(message), key_(std::move(key)), path_(path.empty() ? key_ : std::move(path)) {}
  const std::string& key() const { return key_; }
  const std::string& path() const { return path_; }

private:
  std::string key_, path_;
};

// `s` cut to at most `max_bytes` (at a UTF-8 boundary, "..." appended when
// cut): the one place messages bound text that came from outside.
inline std::string cut_for_message(std::string s, size_t max_bytes = 80) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a code point
  return s.substr(0, cut) + "...";
}

// A JSON value for an error message, bounded: a scalar as its JSON text (a
// string quoted and escaped, so a control byte or a newline cannot forge
// output; cut to about 80 bytes), a list or an object by its size. Every
// reader of outside JSON quotes values through this, never j.dump(): dump
// recurses once per nesting level, and a 64 KiB request body of '[' overflowed
// the stack (fuzzing), as did a caption file's token nested 100,000 deep.
inline std::string describe(const nlohmann::json& v) {
  if (v.is_array()) return "a list of " + std::to_string(v.size()) + " items";
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " keys";
  if (v.is_string()) {  // cut before escaping: a 100 MB string is not copied whole to quote 80 bytes of it
    const std::string& s = v.get_ref<const std::string&>();
    const nlohmann::json head = s.size() > 96 ? s.substr(0, 96) : s;  // (a code point split here ends past the final cut)
    return cut_for_message(head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return cut_for_message(v.dump());
}

// nlohmann's parse error for a message, bounded: its what() quotes the last
// token read whole, so an unterminated 1 MB string gave a 1 MB message.
inline std::string parse_error_text(const nlohmann::json::exception& e) { return cut_for_message(e.what(), 240); }

// Text from outside (a key, a query parameter or a header value) for an error
// message: quoted, escaped and bounded as describe() does a JSON string (a NUL
// is \u0000, never a raw byte that would cut the message where what() is read
// as a C string; bytes that are not UTF-8 are replaced).
inline std::string describe_text(const std::string& text) { return describe(nlohmann::json(text.substr(0, 96))); }

// A key for an error message: as it is when it is a plain name ("beam",
// "max_epochs"), else quoted by describe_text.
inline std::string describe_key(const std::string& key) {
  const bool plain = !key.empty() && key.size() <= 64 && key.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                               "0123456789_-") == std::string::npos;
  return plain ? key : describe_text(key);
}

class ObjectReader {
public:
  // `path` names the object in error messages ("model", "train", ...).
  ObjectReader(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) throw std::invalid_argument(path_ + ": expected a mapping of keys to values, got " + describe(j_));
  }

  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  // A whole number in int64 (also written as 4.0 or 1e3). An unsigned above
  // INT64_MAX or a float beyond int64 (1e300, inf, nan) is refused, not
  // wrapped: converting such a double to int64 is undefined behaviour.
  int64_t get_int(const std::string& key, int64_t dflt) {
    const nlohmann::json* v = take(key);
    if (!v) return dflt;
    if (const auto x = whole_number<int64_t>(*v)) return *x;
    throw bad(key, "a whole number within 64 bits", *v);
  }
  // ... in [lo, hi] (e.g. the range of the int it is narrowed to).
  int64_t get_int(const std::string& key, int64_t dflt, int64_t lo, int64_t hi) {
    const int64_t x = get_int(key, dflt);
    if (x < lo || x > hi) throw out_of_range(key, std::to_string(x), std::to_string(lo), std::to_string(hi));
    return x;
  }
  // A finite number (NaN and infinities throw naming the key).
  double get_double(const std::string& key, double dflt) {
    const nlohmann::json* v = take(key);
    if (!v) return dflt;
    if (v->is_number() && std::isfinite(v->get<double>())) return v->get<double>();  // (a double: no conversion)
    throw bad(key, "a finite number", *v);
  }
  // ... in [lo, hi].
  double get_double(const std::string& key, double dflt, double lo, double hi) {
    const double x = get_double(key, dflt);
    if (!(x >= lo && x <= hi)) throw out_of_range(key, num(x), num(lo), num(hi));
    return x;
  }
  bool get_bool(const std::string& key, bool dflt) {
    const nlohmann::json* v = take(key);
    if (!v) return dflt;
    if (v->is_boolean()) return v->get<bool>();
    throw bad(key, "true or false", *v);
  }
  std::string get_string(const std::string& key, const std::string& dflt) {
    const nlohmann::json* v = take(key);
    if (!v) return dflt;
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number()) return v->dump();  // e.g. a file name that looks like a number
    throw bad(key, "a string", *v);
  }
  std::vector<std::string> get_strings(const std::string& key) {
    const nlohmann::json* v = take(key);
    std::vector<std::string> out;
    if (!v) return out;
    if (v->is_string()) return {v->get<std::string>()};
    if (!v->is_array()) throw bad(key, "a string or a list of strings", *v);
    for (const auto& e : *v) {
      if (!e.is_string()) throw bad(key, "a list of strings", *v);
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  // One of `names` (the keys of the map); the error lists them.
  template <class E>
  E get_enum(const std::string& key, E dflt, const std::vector<std::pair<std::string, E>>& names) {
    const nlohmann::json* v = take(key);
    if (!v) return dflt;
    std::string allowed;
    for (const auto& [n, e] : names) {
      if (v->is_string() && v->get<std::string>() == n) return e;
      allowed += (allowed.empty() ? "" : ", ") + n;
    }
    throw bad(key, "one of " + allowed, *v);
  }
  // A nested object, or nullptr when absent.
  const nlohmann::json* child(const std::string& key) { return take(key); }

  // Throws naming the first key that no get_* asked for.
  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!asked_.count(it.key())) {
        std::string known;
        for (const auto& k : asked_) known += (known.empty() ? "" : ", ") + k;
        throw FieldError(it.key(), path_ + "." + describe_key(it.key()) + ": unknown key (known keys: " + known + ")",
                         key_path(it.key()));
      }
  }

  std::string key_path(const std::string& key) const { return path_ + "." + key; }

private:
  const nlohmann::json* take(const std::string& key) {
    asked_.insert(key);
    if (!j_.contains(key) || j_.at(key).is_null()) return nullptr;
    return &j_.at(key);
  }
  FieldError bad(const std::string& key, const std::string& want, const nlohmann::json& v) const {
    return FieldError(key, key_path(key) + ": expected " + want + ", got " + describe(v), key_path(key));
  }
  FieldError out_of_range(const std::string& key, const std::string& x, const std::string& lo, const std::string& hi) const {
    return FieldError(key, key_path(key) + ": " + x + " outside [" + lo + ", " + hi + "]", key_path(key));
  }
  static std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }

  const nlohmann::json& j_;
  std::string path_;
  std::set<std::string> asked_;  // every key a get_* asked for, present or not
};

}  // namespace attn::config
