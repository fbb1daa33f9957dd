// The server's routes (internal to serve/; includes httplib):
//   POST /v1/translate (a text model), POST /v1/caption (an image model),
//   POST /v1/explain (a sentence or an image, as the model reads),
//   GET /health, GET /metrics, GET / and every embedded web file (static_files.h).
// A known path asked with another method answers 405 (with Allow); every
// error's body is {"error": message, "field": name or null}.
#pragma once
#include <httplib.h>

#include <optional>
#include <string>
#include <vector>

#include "attn/decode/captioner.h"
#include "attn/decode/model_dir.h"
#include "attn/serve/batcher.h"
#include "attn/serve/metrics.h"
#include "attn/serve/options.h"

namespace attn::serve {

struct RouteContext {
  const decode::TranslationModel& model;
  std::optional<decode::ImageModelInput> image;  // what an image model reads; nullopt: a text model
  const ServerOptions& options;  // limits.max_texts already within the queue
  MicroBatcher& batcher;
  Metrics& metrics;
};

// Every path the server answers (the metrics' path labels).
std::vector<std::string> route_paths();

void add_routes(httplib::Server& http, const RouteContext& ctx);

// Sets `res` to status + the JSON error body.
void set_error(httplib::Response& res, int status, const std::string& message, const std::string& field = "");

}  // namespace attn::serve
