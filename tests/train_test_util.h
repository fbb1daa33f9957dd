// Small helpers shared by the training and checkpoint tests.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/nn/layers.h"
#include "attn/tensor/safetensors.h"

namespace attn::testing {

// Two Linear layers around a LayerNorm: parameter names fc1.weight, fc1.bias,
// norm.weight, norm.bias, fc2.weight, fc2.bias.
// x [N, in] -> [N, out]
struct TinyNet : nn::Module {
  TinyNet(int64_t in, int64_t hidden, int64_t out, uint64_t seed) {
    Rng rng(seed);
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(in, hidden, true, rng));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(hidden));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(hidden, out, true, rng));
  }
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::LayerNorm> norm;
};

inline bool bit_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  return std::memcmp(a.data(), b.data(), size_t(a.numel()) * sizeof(float)) == 0;
}

inline bool params_bit_equal(const nn::Module& a, const nn::Module& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (pa[i].first != pb[i].first || !bit_equal(pa[i].second, pb[i].second)) return false;
  return true;
}

// Two safetensors files hold the same tensors, names and bits.
inline bool same_tensors(const std::string& a, const std::string& b) {
  auto x = load_safetensors(a).tensors, y = load_safetensors(b).tensors;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || !bit_equal(x[i].second, y[i].second)) return false;
  return true;
}

// A fresh empty directory under the build tree, removed by the destructor.
struct TempDir {
  explicit TempDir(const std::string& tag) {
    path = std::string(ATTN_BINARY_DIR) + "/tmp_" + tag + "_" + std::to_string(::getpid());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

// The message of the std::invalid_argument `f` throws, or "" when it returns.
template <class F>
std::string invalid_argument_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The step of the checkpoint in run directory `run` (its trainer_state.json)
inline int64_t checkpoint_step(const std::string& run) {
  return nlohmann::json::parse(read_bytes(run + "/checkpoint/trainer_state.json")).at("step").get<int64_t>();
}

// The `attn` command run with `args` and stdin_text, its files in `dir`.
struct CommandResult {
  int status;
  std::string out, err;
};
inline CommandResult run_attn(const std::string& args, const std::string& dir, const std::string& stdin_text = "") {
  const std::string in = dir + "/stdin.txt", out = dir + "/stdout.txt", err = dir + "/stderr.txt";
  std::ofstream(in) << stdin_text;
  const std::string cmd = std::string(ATTN_BINARY_DIR) + "/attn " + args + " < " + in + " > " + out + " 2> " + err;
  const int rc = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
}

// Starts the program args[0] with args (an absolute path: no PATH search),
// stdout and stderr to `output`; returns its pid (wait for it with
// wait_exit). `before_exec` runs in the child first (e.g. to set a resource limit).
inline pid_t spawn_command(std::vector<std::string> args, const std::string& output,
                           const std::function<void()>& before_exec = {}) {
  std::fflush(stdout);  // else the child inherits, and prints again, what the parent has not flushed
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    FILE* f = std::freopen(output.c_str(), "w", stdout);
    (void)f;
    ::dup2(::fileno(stdout), 2);
    if (before_exec) before_exec();
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Starts `attn train --config cfg extra...` through spawn_command.
inline pid_t spawn_train(const std::string& cfg, const std::vector<std::string>& extra, const std::string& output,
                         const std::function<void()>& before_exec = {}) {
  std::vector<std::string> args = {std::string(ATTN_BINARY_DIR) + "/attn", "train", "--config", cfg};
  args.insert(args.end(), extra.begin(), extra.end());
  return spawn_command(std::move(args), output, before_exec);
}

// Exit code of `pid` (-signal when killed by a signal).
inline int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

}  // namespace attn::testing
