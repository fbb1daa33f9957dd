// `attn serve -m RUN`: the model of a run directory (a translation model or an
// image captioner) behind an HTTP API
// (serve/server.h; docs/translating-and-serving.md, "attn serve", documents the routes and limits).
// Prints "attn serve: listening on http://HOST:PORT" on stderr once it listens;
// SIGTERM or SIGINT stops it: no new connections, the requests in flight are
// answered, then it exits 0.
#include <csignal>
#include <filesystem>
#include <iostream>

#include "attn/cli/search_options.h"
#include "attn/cli/commands.h"
#include "attn/decode/explain.h"
#include "attn/decode/model_dir.h"
#include "attn/serve/server.h"
#include "attn/serve/stop_signals.h"

namespace attn::cli {

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "serve a trained model over HTTP (translate or caption, explain, the web page)");
  struct Opts {
    std::string model, weights, compute = "fp32";
    ShortlistChoice shortlist;
    serve::ServerOptions server;
  };
  auto o = std::make_shared<Opts>();
  serve::ServerOptions& s = o->server;
  cmd->add_option("-m,--model", o->model, "run directory written by `attn train`")->required();
  cmd->add_option("--weights", o->weights, "weights file instead of DIR/model.safetensors");
  cmd->add_option("--host", s.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", s.port, "port (0: a free one, printed)")->capture_default_str();
  cmd->add_option("--max-batch", s.max_batch, "a batch closes at this many sentences...")->capture_default_str();
  cmd->add_option("--max-wait-ms", s.max_wait_ms, "...or this long after its first request")->capture_default_str();
  cmd->add_option("--queue", s.queue, "sentences waiting to be decoded; more: 503")->capture_default_str();
  cmd->add_option("--max-body", s.max_body, "request body limit in bytes; more: 413")->capture_default_str();
  cmd->add_option("--max-image-pixels", s.max_image_pixels, "an uploaded image declaring more pixels: 413")
      ->capture_default_str();
  cmd->add_option("--max-src-pieces", s.limits.max_src_pieces, "a text of more source pieces: 400")
      ->capture_default_str();
  cmd->add_option("--max-beam", s.limits.max_beam, "largest beam a request may ask for")->capture_default_str();
  cmd->add_option("--max-top-k", s.limits.max_top_k, "largest top_k an explain request may ask for")
      ->capture_default_str();
  cmd->add_option("--max-texts", s.limits.max_texts, "most texts in one request (at most --queue)")
      ->capture_default_str();
  cmd->add_option("--threads", s.threads, "compute threads of the decoder")->capture_default_str();
  add_compute_option(*cmd, o->compute);
  add_shortlist_options(*cmd, o->shortlist);
  cmd->add_option("--http-threads", s.http_threads, "connections served at once")->capture_default_str();
  cmd->add_option("--timeout-s", s.timeout_s, "read / write / keep-alive timeout of a connection")
      ->capture_default_str();
  cmd->callback([o] {
    serve::StopSignals signals;  // before any thread starts, so that no thread dies of SIGTERM
    decode::TranslationModel tm = decode::load_model_dir(o->model, o->weights);  // text or image model
    o->server.compute = compute_type(o->compute, *tm.model);  // refuses a kind without a reduced-precision search
    o->server.shortlist = load_shortlist(o->shortlist, o->model, tm);
    o->server.model_name = std::filesystem::path(o->model).lexically_normal().filename().string();
    if (o->server.model_name.empty()) o->server.model_name = o->model;
    // POST /v1/explain: what `attn explain --format json` prints for the sentence or
    // image (run on the decoding worker; an upload has no "image" path)
    o->server.explain = [&tm, max_src_pieces = o->server.limits.max_src_pieces,
                         compute = o->server.compute](const nlohmann::json& r, const Tensor& pixels) {
      decode::ExplainOptions eo;
      eo.beam = r.at("beam").get<int>();
      eo.top_k = r.at("top_k").get<int>();
      eo.words = r.at("words").get<bool>();
      eo.attention_map = r.value("attention_map", std::string());
      eo.self_attention_map = r.value("self_attention_map", std::string());
      eo.max_src_pieces = max_src_pieces;
      eo.compute = compute;
      if (pixels.defined()) return decode::explain_pixels(tm, pixels, eo);
      return decode::explain_text(tm, r.at("text").get<std::string>(), eo);
    };
    serve::Server server(tm, o->server);
    const int port = server.bind();
    signals.watch([&server](int sig) {
      std::cerr << "attn serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
                << ", answering the requests in flight and stopping" << std::endl;
      server.stop();
    });
    std::cerr << "attn serve: listening on http://" << o->server.host << ":" << port << std::endl;
    server.run();
    signals.stop_watching();  // before `server` goes
    std::cerr << "attn serve: stopped" << std::endl;
  });
}

}  // namespace attn::cli
