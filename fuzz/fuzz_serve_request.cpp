// Fuzz target: what the HTTP server checks of a request itself, by the same
// functions the server calls. The first byte chooses:
//   bit 1 clear: a request body (serve/request.*), bit 0 the route (even:
//     POST /v1/translate, odd: /v1/explain); the rest is the body;
//   bit 1 set: request headers (serve/header_checks.h, the pre-routing checks
//     that run before a body is read); the rest is "Name: value" lines.
// httplib's own parsing of the request line and headers (and so of pipelined
// requests) is in libcpp-httplib, not here: the tests cover it
// (ServeHostile.PipelinedRequestsAreAllAnsweredInOrder).
#include <cstdlib>

#include "attn/serve/header_checks.h"
#include "attn/serve/request.h"
#include "fuzz_input.h"

namespace {

// Each line "Name: value" (a line without a colon is a name with an empty
// value) through refuse_header: a refusal is 411 or 415, with a message that
// quotes the value escaped and bounded (no raw NUL, not the whole value).
void check_headers(std::string_view text) {
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t colon = std::min(line.find(':'), line.size());
    const std::string name(line.substr(0, colon));
    const std::string value(line.substr(std::min(colon + 1, line.size())));
    const auto no = attn::serve::refuse_header(name, value);
    if (!no) continue;
    if (no->status != 411 && no->status != 415) std::abort();
    if (no->message.empty() || no->message.find('\0') != std::string::npos || no->message.size() > 400) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn;
  if (size == 0) return 0;
  const std::string_view rest = fuzz::as_view(data + 1, size - 1);
  if (data[0] & 2) {
    check_headers(rest);
    return 0;
  }
  const std::string body(rest);
  const serve::RequestLimits limits;
  try {
    if (data[0] & 1) {
      nlohmann::json r = serve::parse_explain_request(body, limits);
      if (!r.contains("text") || !r.contains("beam") || !r.contains("top_k") || !r.contains("words") ||
          !r.contains("attention_map") || !r.contains("self_attention_map"))
        std::abort();
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
