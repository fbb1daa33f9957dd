// The request bodies of POST /v1/translate and POST /v1/explain, and the
// query parameters of an uploaded image's requests (POST /v1/caption, an
// image's POST /v1/explain), read strictly: malformed JSON, a field or
// parameter of the wrong type or out of range, an unknown one and an
// over-long text are each a RequestError naming the field, which the server
// answers with 400 {"error": message, "field": name}.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/data/vocab.h"
#include "attn/serve/options.h"

namespace attn::serve {

class RequestError : public std::invalid_argument {
public:
  // field: the offending field, or "" when the body as a whole is wrong (JSON null)
  RequestError(std::string field, const std::string& message)
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

private:
  std::string field_;
};

// {"text": "..."} or {"texts": ["...", ...]}, "beam" (default 5), "alignments" (default false),
// "attention_map" (default "": the model's own; the route refuses a name the model does not report).
struct TranslateRequest {
  std::vector<std::string> texts;  // one or more (an empty text is allowed: it translates to "")
  bool many = false;               // given as "texts": the answer is {"translations": [...]}
  int beam = 5;
  bool alignments = false;
  std::string attention_map;       // the map of "weights" ("": the model's default)
};

TranslateRequest parse_translate_request(const std::string& body, const RequestLimits& limits);

// {"text", "beam" (default 1), "top_k" (default 5), "words" (default false),
// "attention_map" (default ""), "self_attention_map" (default "": a model with
// encoder self-attention shows its default)}, returned with every field
// present: what the ExplainFunction receives.
nlohmann::json parse_explain_request(const std::string& body, const RequestLimits& limits);

// The over-long text rule: a text of more than limits.max_src_pieces source
// pieces is refused (decoding never cuts a request's text). `field` names the
// request's field ("text" or "texts") in the error, with the text's index for "texts".
// A URL's query parameters, name -> value (httplib::Params).
using QueryParams = std::multimap<std::string, std::string>;

// POST /v1/caption's query: ?beam=K (default 1: greedy, as `attn caption`),
// &attention_map=NAME (default: the model's own).
struct CaptionRequest {
  int beam = 1;
  std::string attention_map;
};
CaptionRequest parse_caption_query(const QueryParams& params, const RequestLimits& limits);

// An image's POST /v1/explain query: ?beam=&top_k=&words= (true / false)&attention_map=,
// returned as {"beam" (default 1), "top_k" (default 5), "words" (default false), "attention_map" (default "")}.
nlohmann::json parse_image_explain_query(const QueryParams& params, const RequestLimits& limits);

void check_src_pieces(const std::vector<std::string>& texts, const std::string& field, const data::SubwordVocab& vocab,
                      const RequestLimits& limits);

}  // namespace attn::serve
