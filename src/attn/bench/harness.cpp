#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "attn/bench/bench.h"

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

namespace {

// 'text' for /bin/sh, so that an install prefix with spaces or quotes still runs its peers
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

void emit(const nlohmann::json& j) {
  std::cout << j.dump() << std::endl;
}

std::vector<nlohmann::json> run_peer(const BenchOptions& opt, const std::string& script, const std::string& args) {
  std::vector<nlohmann::json> out;
  std::string cmd = "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 OPENBLAS_THREAD_TIMEOUT=4 "
                    "OMP_WAIT_POLICY=passive " +
                    opt.python + " " + shell_quote(opt.peer_dir + "/" + script) + " --threads " +
                    std::to_string(opt.threads) + " --repeats " + std::to_string(opt.repeats) + " " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    emit({{"impl", "torch"}, {"error", "cannot start: " + cmd}});
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
      std::cerr << "peer: " << line;
    }
  }
  int rc = ::pclose(p);
  if (rc != 0) emit({{"impl", "torch"}, {"script", script}, {"error", "peer exited with status " + std::to_string(rc)}});
  return out;
}

}  // namespace attn::bench
