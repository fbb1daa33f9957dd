#include "attn/serve/server.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "attn/config/object_reader.h"
#include "attn/serve/batcher.h"
#include "attn/serve/connection.h"
#include "attn/serve/header_checks.h"
#include "attn/serve/metrics.h"
#include "attn/serve/model_batch.h"
#include "attn/serve/routes.h"
#include "attn/serve/thread_pool.h"

namespace attn::serve {
namespace {

ServerOptions checked(ServerOptions o) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("serve: " + what);
  };
  need(o.port >= 0 && o.port <= 65535, "--port must be in [0, 65535]");
  need(o.max_batch >= 1, "--max-batch must be >= 1");
  need(o.max_wait_ms >= 0, "--max-wait-ms must be >= 0");
  need(o.queue >= 1, "--queue must be >= 1");
  need(o.max_body >= 2, "--max-body must be >= 2 bytes");
  need(o.max_image_pixels >= 1, "--max-image-pixels must be >= 1");
  need(o.threads >= 1, "--threads must be >= 1");
  need(o.timeout_s >= 1, "--timeout-s must be >= 1");
  need(o.http_threads >= 1, "--http-threads must be >= 1");
  need(o.limits.max_beam >= 1, "--max-beam must be >= 1");
  need(o.limits.max_top_k >= 1, "--max-top-k must be >= 1");
  need(o.limits.max_texts >= 1, "--max-texts must be >= 1");
  need(o.limits.max_src_pieces >= 1, "--max-src-pieces must be >= 1");
  o.limits.max_texts = std::min(o.limits.max_texts, o.queue);  // a request the queue cannot hold is refused (400)
  return o;
}

// When the request being served on this thread started (its headers read):
// set by the pre-routing handler, read and cleared by the logger, which
// httplib calls after every response (requests refused before routing count 0 s).
thread_local std::optional<std::chrono::steady_clock::time_point> request_start;

// The message of an error httplib answers by itself (no handler ran)
std::string builtin_error(int status, const httplib::Request& req, size_t max_body) {
  switch (status) {
    case 404: return "no such path: " + config::describe_text(req.path);
    case 413: return "request body over the limit of " + std::to_string(max_body) + " bytes (--max-body)";
    case 400: return "malformed HTTP request";
    default: return std::string("HTTP error ") + std::to_string(status);
  }
}

}  // namespace

struct Server::Impl {
  const decode::TranslationModel& model;
  ServerOptions options;
  Metrics metrics;
  MicroBatcher batcher;
  RouteContext context;
  PipelinedServer http;
  int port = -1;
  int listen_fd = -1;  // the listening socket (httplib's socket options hook reports it)
  std::atomic<bool> stop_requested{false}, running{false};

  Impl(const decode::TranslationModel& m, ServerOptions o)
      : model(m),
        options(checked(std::move(o))),
        metrics(route_paths()),
        batcher(BatcherOptions{options.max_batch, std::chrono::milliseconds(options.max_wait_ms), options.queue,
                               options.threads},
                model_translate_batch(m, options.max_batch, options.compute, options.shortlist), model_caption_batch(m, options.compute), options.explain,
                [this](int64_t n) { metrics.record_batch(n); }),
        context{m, decode::image_model_input(m.model->config()), options, batcher, metrics} {
    configure();
  }

  void configure() {
    const int pool = options.http_threads;
    http.new_task_queue = [pool] { return new BoundedThreadPool(pool); };
    http.set_read_timeout(options.timeout_s, 0);
    http.set_write_timeout(options.timeout_s, 0);
    http.set_keep_alive_timeout(options.timeout_s);
    http.set_keep_alive_max_count(100);
    // an answer goes out in two writes (headers, body): with Nagle's algorithm the
    // second waits for the client's delayed ACK, ~40-100 ms on every request
    http.set_tcp_nodelay(true);
    http.set_payload_max_length(options.max_body);
    http.set_socket_options([this](socket_t sock) {
      // not httplib::default_socket_options: its SO_REUSEPORT let a second server bind
      // a port in use, and the kernel then split the connections between the two.
      // SO_REUSEADDR alone rebinds over TIME_WAIT connections, never over a listener.
      const int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      listen_fd = sock;
    });
    http.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      request_start = std::chrono::steady_clock::now();
      // before the body is read: refused bodies (header_checks.h) are never read
      for (const auto& [name, value] : req.headers)
        if (const std::optional<HeaderRefusal> no = refuse_header(name, value)) {
          set_error(res, no->status, no->message);
          if (no->status == 415) res.set_header("Accept-Encoding", "identity");  // RFC 9110, 15.5.16
          res.set_header("Connection", "close");  // the body is unread: nothing after it can be parsed
          return httplib::Server::HandlerResponse::Handled;
        }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // a route's own error
          set_error(res, res.status, builtin_error(res.status, req, options.max_body));
          return httplib::Server::HandlerResponse::Handled;
        }));
    // counted just before the answer is written (httplib's logger runs after it): a
    // client that has its answer then sees it in /metrics
    http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      double seconds = 0;
      if (request_start)
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *request_start).count();
      request_start.reset();
      metrics.record_request(req.path, res.status, seconds);
      if (res.get_header_value("Connection") == "close") close_after_this_answer();
    });
    add_routes(http, context);
  }
};

Server::Server(const decode::TranslationModel& model, ServerOptions options)
    : impl_(std::make_unique<Impl>(model, std::move(options))) {}

Server::~Server() {
  stop();
  while (impl_->running) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->batcher.stop();
}

int Server::bind() {
  Impl& s = *impl_;
  errno = 0;
  s.port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                               : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  const int err = errno;  // bind's (httplib closes the socket after, which keeps errno)
  if (s.port < 0 && err == EADDRINUSE)
    throw std::runtime_error("serve: port " + std::to_string(s.options.port) + " on " + s.options.host +
                             " is in use (another server?)");
  if (s.port < 0)
    throw std::runtime_error("serve: cannot listen on " + s.options.host + ":" + std::to_string(s.options.port) +
                             (err ? std::string(": ") + std::strerror(err) : std::string()));
  // httplib 0.11 listens with a backlog of 5: of 1,000 clients connecting at once most
  // would wait for SYN retransmissions (1 s, 3 s, 7 s, ...). Listening again only
  // raises the backlog (to the kernel's cap): they queue until a connection thread is free.
  if (s.listen_fd >= 0) ::listen(s.listen_fd, SOMAXCONN);
  return s.port;
}

void Server::run() {
  Impl& s = *impl_;
  if (s.port < 0) throw std::logic_error("serve: run() before bind()");
  s.running = true;
  if (!s.stop_requested) s.http.listen_after_bind();  // returns after stop(), every connection's thread joined
  s.batcher.stop();  // nothing is waiting any more (each request's thread waited for its answer)
  s.running = false;
}

void Server::stop() {
  Impl& s = *impl_;
  if (s.stop_requested.exchange(true)) return;
  // run() may be between its check and httplib's start: wait until httplib runs or run() is over
  while (s.running && !s.http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (s.http.is_running()) s.http.stop();
}

}  // namespace attn::serve
