#include "attn/serve/header_checks.h"

#include <algorithm>
#include <cctype>

#include "attn/config/object_reader.h"

namespace attn::serve {
namespace {

// `value` without the optional whitespace around it, lower case
std::string token(const std::string& value) {
  const size_t b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t");
  std::string t = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

// HTTP field names compare without regard to case (every byte: a NUL inside
// does not end the name, as it would for strcasecmp)
bool same_name(const std::string& a, const char* b) {
  return std::equal(a.begin(), a.end(), b, b + std::char_traits<char>::length(b), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::optional<HeaderRefusal> refuse_header(const std::string& name, const std::string& value) {
  if (same_name(name, "Transfer-Encoding"))
    return HeaderRefusal{411, "a request body needs a Content-Length (Transfer-Encoding is not accepted)"};
  if (same_name(name, "Content-Encoding") && token(value) != "identity")
    return HeaderRefusal{415, "Content-Encoding " + config::describe_text(value) +
                                  " is not accepted: send the body uncompressed (--max-body bounds the bytes sent, "
                                  "and a compressed body would unpack past it)"};
  return std::nullopt;
}

}  // namespace attn::serve
