// The checks a request's headers meet before its body is read (the server's
// pre-routing handler runs them; fuzz_serve_request fuzzes them). Each one
// refuses a body that httplib 0.11 would otherwise read past --max-body:
//   - Transfer-Encoding (chunked): httplib reads the chunks whole, with no
//     limit -> 411, a body needs a Content-Length;
//   - Content-Encoding other than identity: httplib unpacks gzip, deflate and
//     br (Debian's build has zlib and brotli) with no limit on the unpacked
//     size, and --max-body bounds only the packed bytes (a 48.6 KB gzip body
//     held 50 MB of JSON: 11.9 GB of memory and 55 s) -> 415. A body the
//     server reads is the body the route gets, byte for byte.
#pragma once
#include <optional>
#include <string>

namespace attn::serve {

struct HeaderRefusal {
  int status;           // 411 or 415
  std::string message;  // the error, naming the header (its value quoted and bounded)
};

// The refusal one request header earns, or nullopt. `name` is matched without
// regard to case, as HTTP field names are.
std::optional<HeaderRefusal> refuse_header(const std::string& name, const std::string& value);

}  // namespace attn::serve
