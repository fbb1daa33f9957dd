// What `attn serve` is told: where to listen, how to batch, and every limit
// a request meets (docs/translating-and-serving.md, "attn serve", documents each one).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/decode/shortlist.h"
#include "attn/nn/step_weight_type.h"
#include "attn/tensor/tensor.h"

namespace attn::serve {

// One explanation for a validated /v1/explain request, every field present:
// a sentence's (decode::explain_text) for {"text", "beam", "top_k", "words",
// "attention_map", "self_attention_map"} with `pixels` undefined, or an uploaded image's
// (decode::explain_pixels) for {"beam", "top_k", "words", "attention_map"}
// with pixels [1, 3, H, W] (decoded, resized and
// normalised for the model). Throws std::invalid_argument for an input it
// cannot explain.
using ExplainFunction = std::function<nlohmann::json(const nlohmann::json& request, const Tensor& pixels)>;

// The limits a request body is checked against (request.h).
struct RequestLimits {
  int max_beam = 16;             // "beam" in [1, max_beam]
  int max_top_k = 50;            // explain: "top_k" in [1, max_top_k]
  int64_t max_texts = 256;       // "texts": at most this many (the queue must hold them: <= queue)
  int64_t max_src_pieces = 250;  // a text of more SentencePiece pieces is refused (400), never cut
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 0;                    // 0: a free port (Server::bind returns it)
  int64_t max_batch = 32;          // a batch closes at this many sentences...
  int max_wait_ms = 5;             // ...or this long after its first request arrived
  int64_t queue = 256;             // sentences waiting for the decoder; a request that does not fit: 503
  size_t max_body = 65536;         // bytes; a longer body: 413 (an uploaded image's bytes too). A request
                                   // in flight takes up to ~320x this (RELIABILITY.md: the memory bound)
  long long max_image_pixels = 2048LL * 2048;  // an upload declaring more pixels (width * height): 413
  int threads = 2;                 // compute threads of the decoding worker (OpenMP / BLAS)
  nn::StepWeightType compute = nn::StepWeightType::F32;  // the searches' products (--compute)
  std::shared_ptr<const decode::Shortlist> shortlist;     // the translations' vocabulary shortlist, or none
  int timeout_s = 5;               // read / write / keep-alive timeout of a connection
  int http_threads = 64;           // connections served at once (each holds a thread while open)
  RequestLimits limits;
  std::string model_name;          // reported by GET /health (the run directory)
  ExplainFunction explain;         // POST /v1/explain; empty: the route answers 501
};

}  // namespace attn::serve
