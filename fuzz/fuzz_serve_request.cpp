// Fuzz target: the HTTP server's request bodies (serve/request.*): POST
// /v1/translate and /v1/explain, decoded by the same functions the routes
// call. The first byte chooses the route; the rest is the body.
#include <cstdlib>

#include "attn/serve/request.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn;
  if (size == 0) return 0;
  const std::string body(fuzz::as_view(data + 1, size - 1));
  const serve::RequestLimits limits;
  try {
    if (data[0] & 1) {
      nlohmann::json r = serve::parse_explain_request(body, limits);
      if (!r.contains("text") || !r.contains("beam") || !r.contains("top_k") || !r.contains("words")) std::abort();
    } else {
      serve::TranslateRequest r = serve::parse_translate_request(body, limits);
      if (r.texts.empty() || int64_t(r.texts.size()) > limits.max_texts) std::abort();
      if (r.beam < 1 || r.beam > limits.max_beam) std::abort();
    }
  } catch (const serve::RequestError&) {
    // answered 400 with the field
  }
  return 0;
}
