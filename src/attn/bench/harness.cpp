#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "attn/bench/bench.h"
#include "attn/cpu/blas.h"
#include "attn/cpu/isa.h"

namespace attn::bench {

double median_ms(const std::function<void()>& fn, int repeats, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    auto a = std::chrono::steady_clock::now();
    fn();
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string find_peer_dir(const std::string& requested) {
  namespace fs = std::filesystem;
  std::vector<fs::path> tried;
  if (!requested.empty()) {
    tried.push_back(requested);
  } else {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) tried.push_back((exe.parent_path() / ATTN_PEERS_FROM_BIN).lexically_normal());
    tried.push_back(fs::path(ATTN_SOURCE_DIR) / "bench" / "peers");
  }
  for (const auto& dir : tried)
    if (fs::is_directory(dir)) return dir.string();
  std::string msg = "bench: no folder of peer scripts at ";
  for (size_t i = 0; i < tried.size(); ++i) msg += (i ? " nor at " : "") + tried[i].string();
  throw std::runtime_error(msg + " (--peer-dir DIR names one; --no-peers runs without the peers)");
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void emit(const nlohmann::json& j) {
  std::cout << j.dump() << std::endl;
}

std::vector<nlohmann::json> run_lines(const std::string& cmd, const std::string& who) {
  std::vector<nlohmann::json> out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    emit({{"impl", who}, {"error", "cannot start: " + cmd}});
    return out;
  }
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    std::string line(buf);
    try {
      auto j = nlohmann::json::parse(line);
      emit(j);
      out.push_back(j);
    } catch (const std::exception&) {
      std::cerr << who << ": " << line;
    }
  }
  int rc = ::pclose(p);
  if (rc != 0) emit({{"impl", who}, {"command", cmd}, {"error", "exited with status " + std::to_string(rc)}});
  return out;
}

std::string peer_environment() {
  // the same BLAS kernels as ours (cpu/blas.h set OPENBLAS_CORETYPE in our
  // environment), and PyTorch's own kernels at our instruction set (it reports
  // AVX2 on AVX-512 machines by default)
  std::string env = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 OPENBLAS_THREAD_TIMEOUT=4 "
                    "OMP_WAIT_POLICY=passive";
  cpu::blas_info();  // opens the BLAS, which sets OPENBLAS_CORETYPE
  if (const char* core = std::getenv("OPENBLAS_CORETYPE")) env += std::string(" OPENBLAS_CORETYPE=") + core;
  const char* aten = std::getenv("ATEN_CPU_CAPABILITY");
  if (aten) env += std::string(" ATEN_CPU_CAPABILITY=") + aten;
  else if (cpu::isa() != cpu::Isa::scalar) env += std::string(" ATEN_CPU_CAPABILITY=") + cpu::isa_name(cpu::isa());
  else env += " ATEN_CPU_CAPABILITY=default";
  return env;
}

std::vector<nlohmann::json> run_peer(const BenchOptions& opt, const std::string& script, const std::string& args) {
  std::string cmd = peer_environment() + " " + opt.python + " " + shell_quote(opt.peer_dir + "/" + script) + " --threads " +
                    std::to_string(opt.threads) + " --repeats " + std::to_string(opt.repeats) + " " + args;
  return run_lines(cmd, "torch");
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

nlohmann::json machine_record() {
  const cpu::BlasInfo& b = cpu::blas_info();
  return {{"cpu", cpu_model()},
          {"isa", cpu::isa_name(cpu::isa())},
          {"isa_detected", cpu::isa_name(cpu::detected_isa())},
          {"blas", b.config},
          {"blas_core", b.core},
          {"blas_coretype_source", b.coretype_source},
          {"blas_coretype_replaced", b.coretype_replaced}};
}

}  // namespace attn::bench
