// `attn serve`: an HTTP server over one loaded model, a translation model or
// an image captioner (routes:
// routes.h; docs/translating-and-serving.md, "attn serve", documents them). Connections are served
// by a pool of threads (options.http_threads), each connection's requests
// read through one buffer, so pipelined HTTP/1.1 requests are all answered in
// order (connection.h); every decode runs on the micro-batcher's single worker
// thread (batcher.h).
//
// Usage:
//   Server s(model, options);
//   int port = s.bind();      // options.port, or a free one when it is 0
//   std::thread t([&] { s.run(); });
//   ...; s.stop(); t.join(); // stop: no new connections, in-flight requests answered
#pragma once
#include <memory>

#include "attn/decode/model_dir.h"
#include "attn/serve/options.h"

namespace attn::serve {

class Server {
public:
  // Throws std::invalid_argument naming the option that is out of range.
  // `model` must outlive the server.
  Server(const decode::TranslationModel& model, ServerOptions options);
  ~Server();  // stop(), and waits for run() to return
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds options.host:options.port (0: a free port) and returns the port.
  // Throws std::runtime_error when it cannot.
  int bind();
  // Serves until stop(); then answers every request in flight (read, queued or
  // decoding) and returns. Needs bind() first.
  void run();
  // From any thread (a signal watcher): stops accepting connections at once;
  // run() returns once the requests in flight are answered.
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attn::serve
