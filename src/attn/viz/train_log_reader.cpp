// read_training_log: a run's log.jsonl back into series, strictly.
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/viz/curves.h"

namespace attn::viz {
namespace {

struct LineContext {
  const std::string& path;
  size_t line;
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(path + ":" + std::to_string(line) + ": " + what);
  }
};

double number(const nlohmann::json& j, const char* key, const std::string& type, const LineContext& at) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) at.fail(type + " record without a numeric \"" + key + "\"");
  return it->get<double>();
}

// A number, or nothing when the field is absent or null.
bool optional_number(const nlohmann::json& j, const char* key, const LineContext& at, double& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_number()) at.fail(std::string("\"") + key + "\" is not a number");
  out = it->get<double>();
  return true;
}

void add_record(const nlohmann::json& j, const LineContext& at, TrainingCurves& c) {
  if (!j.is_object()) at.fail("not a JSON object");
  auto type_it = j.find("type");
  if (type_it == j.end() || !type_it->is_string()) at.fail("no \"type\" string");
  const std::string type = type_it->get<std::string>();
  if (type == "train") {
    c.loss.push_back({number(j, "step", type, at), number(j, "elapsed_s", type, at), number(j, "loss", type, at)});
  } else if (type == "valid") {
    const double step = number(j, "step", type, at), time = number(j, "elapsed_s", type, at);
    double v = 0;
    if (optional_number(j, "perplexity", at, v)) c.perplexity.push_back({step, time, v});
    if (optional_number(j, "bleu", at, v)) c.bleu.push_back({step, time, v});
  }
}

}  // namespace

TrainingCurves read_training_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  TrainingCurves c;
  std::string text;
  for (size_t n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const LineContext at{path, n};
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      at.fail(std::string("not JSON (") + e.what() + ")");
    }
    add_record(j, at, c);
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return c;
}

}  // namespace attn::viz
