// Shared by the `attn serve` tests: a tiny trained model (the toy task of
// data/toy_tasks.h) and a tiny captioner (generated scenes), each trained once
// per build tree and shared by the test processes, a server running in this process on a free loopback port, and
// small HTTP helpers.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "attn/data/line_reader.h"
#include "attn/decode/model_dir.h"
#include "attn/serve/server.h"
#include "attn/train/mt_trainer.h"
#include "caption_run.h"
#include "toy_run.h"
#include "train_test_util.h"

namespace attn::testing {

// `dir`, made once per build tree: ctest runs the tests in separate processes,
// two at a time, so the first one makes it under a lock file (make(scratch)
// fills a scratch folder and returns the folder to rename to `dir`); the
// others wait and reuse it. `done` is a file whose presence means it is made.
inline std::string make_once(const std::string& dir, const std::string& done,
                             const std::function<std::string(const std::string& scratch)>& make) {
  namespace fs = std::filesystem;
  const std::string lock_path = dir + ".lock";
  struct Lock {  // released on every way out, a throwing make() included (closing the file drops the flock)
    int fd;
    ~Lock() {
      if (fd >= 0) ::close(fd);
    }
  } lock{::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644)};
  if (lock.fd < 0 || ::flock(lock.fd, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + lock_path);
  if (!fs::exists(dir + "/" + done)) {
    const std::string tmp = dir + ".tmp" + std::to_string(::getpid());
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    const std::string made = make(tmp);
    fs::remove_all(dir);
    fs::rename(made, dir);
    fs::remove_all(tmp);
  }
  return dir;
}

// The run directory of a small rnnsearch trained on the reversal task (5 epochs
// of 3000 pairs, one thread, seeded): ATTN_BINARY_DIR/serve_toy_run.
inline const std::string& serve_toy_run() {
  static const std::string run =
      make_once(std::string(ATTN_BINARY_DIR) + "/serve_toy_run", "model.safetensors", [](const std::string& tmp) {
        write_toy(tmp, "train", 3000, 21);
        write_toy(tmp, "valid", 50, 22);
        train::TrainConfig cfg = train::parse_train_config(
            toy_config(tmp, tmp + "/run", "  max_epochs: 5\n  valid_every: 0\n  log_every: 1000\n  threads: 1\n"));
        train::RunOptions quiet;
        quiet.print = [](const std::string&) {};
        train::train_translation(cfg, quiet);
        return tmp + "/run";
      });
  return run;
}

// The run directory of a tiny Transformer (toy_run.h's kToyTransformer: 2 + 2
// layers of 2 heads) trained on the reversal task (3 epochs of 2000 pairs, one
// thread, seeded): ATTN_BINARY_DIR/serve_transformer_run. Its maps have layers
// and heads; what it translates is not checked, only how.
inline const std::string& serve_transformer_run() {
  static const std::string run =
      make_once(std::string(ATTN_BINARY_DIR) + "/serve_transformer_run", "model.safetensors", [](const std::string& tmp) {
        write_toy(tmp, "train", 2000, 23);
        write_toy(tmp, "valid", 50, 24);
        train::TrainConfig cfg = train::parse_train_config(
            toy_config(tmp, tmp + "/run", "  max_epochs: 3\n  valid_every: 0\n  log_every: 1000\n  threads: 1\n", "",
                       kToyTransformer));
        train::RunOptions quiet;
        quiet.print = [](const std::string&) {};
        train::train_translation(cfg, quiet);
        return tmp + "/run";
      });
  return run;
}

// A small captioner (tests/caption_run.h's toy_captioner, soft attention)
// trained by `attn train -c` for 1000 steps on 300 generated 32x32 scenes
// (about 11 s on 2 threads): ATTN_BINARY_DIR/serve_caption_run/{run, scenes}.
// CaptionE2E's 150 steps give every scene the same caption ("an image of a
// small greend a small greend ..."); after 1000 the captions name the shapes
// ("an image of a small red square"), so a test can tell scenes apart.
struct CaptionRun {
  std::string run;                  // the run directory
  std::vector<std::string> images;  // the scenes' PNG files, sorted
};

inline const CaptionRun& serve_caption_run() {
  static const CaptionRun r = [] {
    namespace fs = std::filesystem;
    const std::string dir =
        make_once(std::string(ATTN_BINARY_DIR) + "/serve_caption_run", "run/model.safetensors", [](const std::string& tmp) {
          const std::string json = write_scenes(tmp + "/scenes", 300, 7);
          const std::string cfg = tmp + "/run.yaml";
          data::write_lines(cfg, {caption_config(json, tmp + "/run",
                                                 "  max_steps: 1000\n  max_epochs: 0\n  valid_every: 0\n"
                                                 "  log_every: 50\n  threads: 2\n  seed: 2\n",
                                                 toy_captioner("soft") + "  dropout: 0\n")});
          const CommandResult t = run_attn("train -c " + cfg, tmp);
          if (t.status != 0) throw std::runtime_error("attn train -c " + cfg + " failed:\n" + t.out + t.err);
          return tmp;
        });
    CaptionRun out;
    out.run = dir + "/run";
    for (const auto& e : fs::directory_iterator(dir + "/scenes/images"))
      if (e.path().extension() == ".png") out.images.push_back(e.path().string());
    std::sort(out.images.begin(), out.images.end());
    return out;
  }();
  return r;
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

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// `attn serve` as a child process with its stderr on a pipe.
struct ServeProcess {
  // `attn serve ARGS...`
  explicit ServeProcess(const std::vector<std::string>& args) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    pid = ::fork();
    if (pid == 0) {
      ::dup2(p[1], 2);
      ::close(p[0]);
      ::close(p[1]);
      std::vector<std::string> all = {std::string(ATTN_BINARY_DIR) + "/attn", "serve"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(p[1]);
    err = ::fdopen(p[0], "r");
  }
  ~ServeProcess() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (err) std::fclose(err);
  }
  // The next line of the child's stderr ("" at its end).
  std::string line() {
    char buf[1024];
    return std::fgets(buf, sizeof buf, err) ? std::string(buf) : std::string();
  }
  // The exit status within `timeout_s`, or -1.
  int wait_exit(double timeout_s) {
    const auto t0 = Clock::now();
    while (seconds_since(t0) < timeout_s) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  pid_t pid = -1;
  FILE* err = nullptr;
};

// The port from the child's first line, "attn serve: listening on http://127.0.0.1:PORT", or -1.
inline int listening_port(ServeProcess& p) {
  const std::string first = p.line();
  const std::string prefix = "attn serve: listening on http://127.0.0.1:";
  EXPECT_EQ(first.rfind(prefix, 0), 0u) << first;
  return first.rfind(prefix, 0) == 0 ? std::stoi(first.substr(prefix.size())) : -1;
}

// A gate a test's explain function waits at, holding the decoding worker
// until the test opens it; open() may be called more than once.
class WorkerGate {
public:
  void wait() const { opened_.wait(); }
  void open() {
    std::call_once(once_, [this] { promise_.set_value(); });
  }

private:
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
  std::once_flag once_;
};

// Opens the gate when it goes out of scope. Declared after everything whose
// destructor waits for the worker (the LiveServer, the clients' futures), it is
// destroyed first: an ASSERT that fails and returns releases the worker, and the
// test fails at once instead of hanging until ctest's timeout.
struct OpenGateOnExit {
  WorkerGate& gate;
  ~OpenGateOnExit() { gate.open(); }
};

// The value of the metric line "name{labels} value" in a Prometheus text, or -1.
inline double metric(const std::string& text, const std::string& name_and_labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name_and_labels + " ", 0) == 0) return std::stod(line.substr(name_and_labels.size() + 1));
  return -1;
}

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

// An error answer: its status, JSON content type, "field", a non-empty "error"
// and, when `says` is given, that text in it; `what` names the case in failures.
inline void expect_error(const httplib::Result& r, int status, const nlohmann::json& field, const std::string& what,
                         const std::string& says = "") {
  ASSERT_TRUE(r) << what;
  EXPECT_EQ(r->status, status) << what << ": " << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << what;
  const nlohmann::json j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["field"], field) << what << ": " << r->body;
  EXPECT_TRUE(j["error"].is_string() && !j["error"].get<std::string>().empty()) << what;
  if (!says.empty()) EXPECT_NE(j["error"].get<std::string>().find(says), std::string::npos) << r->body;
}

inline httplib::Result post_json(httplib::Client& c, const std::string& path, const std::string& body) {
  return c.Post(path.c_str(), body, "application/json");
}

}  // namespace attn::testing
