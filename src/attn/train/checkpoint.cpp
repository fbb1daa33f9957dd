// Training checkpoint directory: model, config, optimizer and trainer state.
#include "attn/train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "attn/config/json_depth.h"
#include "attn/config/object_reader.h"  // whole_number, finite_float, describe
#include "attn/nn/load_params.h"
#include "attn/train/checkpoint_detail.h"

namespace attn::train {

namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kTrainerFile = "trainer_state.json";
constexpr int kTrainerStateVersion = 1;
constexpr size_t kMaxTrainerStateDepth = 16;  // JSON nesting; attn writes 3

// A fresh id stamped on every file of one save.
std::string new_checkpoint_id() {
  std::random_device rd;
  uint64_t id = (uint64_t(rd()) << 32) ^ uint64_t(rd());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

// 17 significant digits: parses back to the same double.
std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

double parse_double(const std::string& s, const std::string& path, const char* what) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) throw std::runtime_error(path + ": malformed " + what + " '" + s + "'");
  return v;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trainer_json(const TrainerState& s, const nn::Module& model, const std::string& id) {
  const nn::NamedRngs streams = model.named_rngs();
  nlohmann::ordered_json j;
  j["format"] = "attn-trainer-state";
  j["version"] = kTrainerStateVersion;
  j["checkpoint_id"] = id;
  j["step"] = s.step;
  j["epoch"] = s.epoch;
  j["data_position"] = s.data_position;
  j["rng_state"] = s.rng_state;
  j["module_rngs"] = nlohmann::ordered_json::object();
  for (const auto& [name, rng] : streams) j["module_rngs"][name] = rng->state();
  // buffers only when the model has any: files of models without stay as they were
  const nn::NamedTensors buffers = model.named_buffers();
  if (!buffers.empty()) {
    j["module_buffers"] = nlohmann::ordered_json::object();
    for (const auto& [name, t] : buffers)  // floats are exact as JSON doubles
      j["module_buffers"][name] = std::vector<float>(t.data(), t.data() + t.numel());
  }
  if (s.best_valid_score)
    j["best_valid_score"] = *s.best_valid_score;
  else
    j["best_valid_score"] = nullptr;
  j["extra"] = nlohmann::ordered_json::parse(s.extra_json);
  return j.dump(2) + "\n";
}

// The module's random streams as trainer_state.json's "module_rngs" holds them:
// the same names, each state valid. Throws naming the file and the stream.
std::vector<std::string> checked_rng_states(const nlohmann::json& saved, const nn::NamedRngs& streams,
                                            const std::string& path) {
  if (!saved.is_object()) throw std::runtime_error(path + ": field 'module_rngs' is not a JSON object");
  std::vector<std::string> states;
  for (const auto& [name, rng] : streams) {
    if (!saved.contains(name))
      throw std::runtime_error(path + ": no state for the model's random stream '" + name + "'");
    const auto& v = saved[name];
    if (!v.is_string()) throw std::runtime_error(path + ": random stream '" + name + "': state is not a string");
    try {
      Rng probe;
      probe.set_state(v.get<std::string>());
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ": random stream '" + name + "': " + e.what());
    }
    states.push_back(v.get<std::string>());
  }
  if (saved.size() != streams.size())
    for (const auto& [name, v] : saved.items()) {
      bool known = false;
      for (const auto& s : streams) known = known || s.first == name;
      if (!known) throw std::runtime_error(path + ": random stream '" + name + "' is not in the model");
    }
  return states;
}

// The model's buffers as trainer_state.json's "module_buffers" holds them
// (null: the file has none): the same names, sizes and finite numbers. Throws
// naming the file and the buffer.
std::vector<std::vector<float>> checked_buffer_values(const nlohmann::json& saved, const nn::NamedTensors& buffers,
                                                      const std::string& path) {
  if (saved.is_null() && buffers.empty()) return {};
  if (!saved.is_object()) throw std::runtime_error(path + ": no 'module_buffers' object, the model has buffers");
  std::vector<std::vector<float>> values;
  for (const auto& [name, t] : buffers) {
    if (!saved.contains(name)) throw std::runtime_error(path + ": no values for the model's buffer '" + name + "'");
    const auto& v = saved[name];
    if (!v.is_array() || int64_t(v.size()) != t.numel())
      throw std::runtime_error(path + ": buffer '" + name + "': expected a list of " + std::to_string(t.numel()) +
                               " numbers");
    std::vector<float> x;
    for (const auto& e : v) {
      const auto f = config::finite_float(e);
      if (!f)
        throw std::runtime_error(path + ": buffer '" + name + "': " + config::describe(e) +
                                 " is not a finite number of fp32");
      x.push_back(*f);
    }
    values.push_back(std::move(x));
  }
  if (saved.size() != buffers.size())
    throw std::runtime_error(path + ": 'module_buffers' has " + std::to_string(saved.size()) +
                             " buffers, the model " + std::to_string(buffers.size()));
  return values;
}

// Parses trainer_state.json; returns the state and sets `id`; `module_rngs`
// gets the "module_rngs" object (null when the file predates it).
TrainerState parse_trainer_json(const std::string& path, std::string& id, nlohmann::json& module_rngs,
                                nlohmann::json& module_buffers) {
  const std::string text = read_text(path);
  // the file nests 3 deep (module_buffers.name[i]); module_rngs is copied and extra dumped below, both recursive
  if (const auto at = config::nesting_beyond(text, kMaxTrainerStateDepth))
    throw std::runtime_error(path + ": nested deeper than " + std::to_string(kMaxTrainerStateDepth) + " levels at byte " +
                             std::to_string(*at) + " (a trainer state nests 3)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not valid JSON: " + config::parse_error_text(e));
  }
  auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(key)) throw std::runtime_error(path + ": missing field '" + key + "'");
    return j[key];
  };
  TrainerState s;
  try {
    if (field("format") != "attn-trainer-state") throw std::runtime_error(path + ": not an attn trainer state file");
    if (config::whole_number<int>(field("version")) != kTrainerStateVersion)
      throw std::runtime_error(path + ": version " + config::describe(field("version")) +
                               ", this build reads version " + std::to_string(kTrainerStateVersion));
    id = field("checkpoint_id").get<std::string>();
    auto count = [&](const char* key) {  // a whole number >= 0 within int64
      const auto n = config::whole_number<int64_t>(field(key));
      if (!n || *n < 0)
        throw std::runtime_error(path + ": field '" + key + "' is " + config::describe(field(key)) +
                                 ", not a count");
      return *n;
    };
    s.step = count("step");
    s.epoch = count("epoch");
    s.data_position = count("data_position");
    s.rng_state = field("rng_state").get<std::string>();
    const auto& best = field("best_valid_score");
    if (!best.is_null()) s.best_valid_score = best.get<double>();
    if (j.contains("module_rngs")) module_rngs = j["module_rngs"];
    if (j.contains("module_buffers")) module_buffers = j["module_buffers"];
    if (j.contains("extra")) {  // optional: files written before the field existed have none
      if (!j["extra"].is_object()) throw std::runtime_error(path + ": field 'extra' is not a JSON object");
      s.extra_json = j["extra"].dump();
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": malformed field: " + e.what());
  }
  return s;
}

// Throws unless the file's checkpoint id matches the trainer state's.
void check_id(const SafetensorsFile& f, const std::string& id, const std::string& trainer_path) {
  auto it = f.metadata.find("checkpoint_id");
  std::string found = it == f.metadata.end() ? "(none)" : it->second;
  if (found != id)
    throw std::runtime_error(f.path + ": inconsistent checkpoint: this file has checkpoint id " + found + " but " +
                             trainer_path + " has " + id +
                             " (a save was interrupted halfway; resume from an older checkpoint)");
}

}  // namespace

void save_checkpoint(const std::string& dir, const CheckpointSave& what) {
  if (!what.model) throw std::invalid_argument("save_checkpoint(" + dir + "): no model given");
  detail::check_config_json(what.config_json);
  try {
    detail::check_config_json(what.trainer.extra_json);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("save_checkpoint(" + dir + "): trainer extra state: " + e.what());
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create checkpoint directory: " + ec.message());
  const std::string id = new_checkpoint_id();
  // Order matters: trainer_state.json is the commit record, written last.
  if (what.optimizer)
    save_safetensors(dir + "/" + kOptimizerFile, what.optimizer->state(),
                     {{"format", "attn-optimizer"},
                      {"optimizer", what.optimizer->name()},
                      {"lr", format_double(what.optimizer->lr())},
                      {"checkpoint_id", id}});
  detail::write_model_file(dir + "/" + kModelFile, what.model->named_parameters(), what.config_json,
                           {{"checkpoint_id", id}});
  write_file_atomic(dir + "/" + kTrainerFile, trainer_json(what.trainer, *what.model, id));
}

LoadedCheckpoint load_checkpoint(const std::string& dir, const CheckpointLoad& into) {
  if (!into.model) throw std::invalid_argument("load_checkpoint(" + dir + "): no model given");
  const std::string trainer_path = dir + "/" + kTrainerFile;
  LoadedCheckpoint out;
  std::string id;
  nlohmann::json saved_rngs, saved_buffers;
  out.trainer = parse_trainer_json(trainer_path, id, saved_rngs, saved_buffers);
  const nn::NamedRngs streams = into.model->named_rngs();
  std::vector<std::string> rng_states;
  if (!saved_rngs.is_null()) rng_states = checked_rng_states(saved_rngs, streams, trainer_path);
  nn::NamedTensors buffers = into.model->named_buffers();  // handles sharing the buffers' values
  const std::vector<std::vector<float>> buffer_values = checked_buffer_values(saved_buffers, buffers, trainer_path);

  // Read and validate everything before touching the model or the optimizer.
  SafetensorsFile model_file = load_safetensors(dir + "/" + kModelFile);
  check_id(model_file, id, trainer_path);
  nn::NamedTensors params = into.model->named_parameters();
  nn::check_params(model_file, params);
  auto cfg = model_file.metadata.find("config");
  out.config_json = cfg == model_file.metadata.end() ? "{}" : cfg->second;

  if (into.optimizer) {
    const std::string opt_path = dir + "/" + kOptimizerFile;
    if (!std::filesystem::exists(opt_path))
      throw std::runtime_error(opt_path + ": cannot open (the checkpoint was saved without optimizer state)");
    SafetensorsFile opt_file = load_safetensors(opt_path);
    check_id(opt_file, id, trainer_path);
    auto kind = opt_file.metadata.find("optimizer");
    std::string saved = kind == opt_file.metadata.end() ? "(unknown)" : kind->second;
    if (saved != into.optimizer->name())
      throw std::runtime_error(opt_path + ": state of a " + saved + " optimizer, cannot load into " +
                               into.optimizer->name());
    auto lr = opt_file.metadata.find("lr");
    if (lr == opt_file.metadata.end()) throw std::runtime_error(opt_path + ": no 'lr' in the metadata");
    double saved_lr = parse_double(lr->second, opt_path, "learning rate");
    if (!(saved_lr >= 0) || !std::isfinite(saved_lr))
      throw std::runtime_error(opt_path + ": learning rate " + lr->second + " is not finite and >= 0");
    try {
      into.optimizer->load_state(opt_file.tensors);  // validates fully before changing anything
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(opt_path + ": " + e.what());
    }
    into.optimizer->set_lr(saved_lr);
  }
  nn::copy_params(model_file, params);  // cannot fail after check_params
  for (size_t i = 0; i < rng_states.size(); ++i) streams[i].second->set_state(rng_states[i]);
  for (size_t i = 0; i < buffer_values.size(); ++i)
    std::copy(buffer_values[i].begin(), buffer_values[i].end(), buffers[i].second.data());
  out.module_rngs_restored = !saved_rngs.is_null();
  return out;
}

}  // namespace attn::train
