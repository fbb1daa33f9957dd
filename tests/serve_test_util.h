// Shared by the `attn serve` tests: a tiny trained model (the toy task of
// data/toy_tasks.h, trained once per build tree and shared by the test
// processes), a server running in this process on a free loopback port, and
// small HTTP helpers.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <httplib.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "attn/decode/model_dir.h"
#include "attn/serve/server.h"
#include "attn/train/mt_trainer.h"
#include "toy_run.h"

namespace attn::testing {

// The run directory of a small rnnsearch trained on the reversal task (5 epochs
// of 3000 pairs, one thread, seeded): ATTN_BINARY_DIR/serve_toy_run. ctest runs
// the tests in separate processes, two at a time, so the first one trains it
// under a lock file into a temporary folder renamed into place; the others wait
// and reuse it.
inline const std::string& serve_toy_run() {
  static const std::string run = [] {
    namespace fs = std::filesystem;
    const std::string dir = std::string(ATTN_BINARY_DIR) + "/serve_toy_run";
    const std::string lock_path = dir + ".lock";
    const int fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + lock_path);
    if (!fs::exists(dir + "/model.safetensors")) {
      const std::string tmp = dir + ".tmp" + std::to_string(::getpid());
      fs::remove_all(tmp);
      fs::create_directories(tmp);
      write_toy(tmp, "train", 3000, 21);
      write_toy(tmp, "valid", 50, 22);
      train::TrainConfig cfg = train::parse_train_config(
          toy_config(tmp, tmp + "/run", "  max_epochs: 5\n  valid_every: 0\n  log_every: 1000\n  threads: 1\n"));
      train::RunOptions quiet;
      quiet.print = [](const std::string&) {};
      train::train_translation(cfg, quiet);
      fs::remove_all(dir);
      fs::rename(tmp + "/run", dir);
      fs::remove_all(tmp);
    }
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return dir;
  }();
  return run;
}

// The toy model loaded once per test process.
inline const decode::TranslationModel& serve_toy_model() {
  static const decode::TranslationModel m = decode::load_translation_model(serve_toy_run());
  return m;
}

// A server of `model` on a free loopback port, run on a thread of its own;
// the destructor stops it (in-flight requests answered) and joins.
struct LiveServer {
  LiveServer(const decode::TranslationModel& model, serve::ServerOptions o) : server(model, std::move(o)) {
    port = server.bind();
    thread = std::thread([this] { server.run(); });
  }
  ~LiveServer() {
    server.stop();
    thread.join();
  }
  std::unique_ptr<httplib::Client> client(int timeout_s = 30) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
    c->set_read_timeout(timeout_s, 0);
    c->set_write_timeout(timeout_s, 0);
    return c;
  }
  serve::Server server;
  int port = 0;
  std::thread thread;
};

// The value of the metric line "name{labels} value" in a Prometheus text, or -1.
inline double metric(const std::string& text, const std::string& name_and_labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name_and_labels + " ", 0) == 0) return std::stod(line.substr(name_and_labels.size() + 1));
  return -1;
}

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A TCP connection to 127.0.0.1:port, or -1 (errno says why).
inline int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

// Everything the peer sends until it closes the connection.
inline std::string read_until_closed(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, size_t(n));
  return out;
}

inline httplib::Result post_json(httplib::Client& c, const std::string& path, const std::string& body) {
  return c.Post(path.c_str(), body, "application/json");
}

}  // namespace attn::testing
