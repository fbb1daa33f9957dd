#include "attn/serve/routes.h"

#include <array>
#include <cctype>
#include <exception>

#include "attn/config/object_reader.h"
#include "attn/image/codec.h"
#include "attn/models/config.h"
#include "attn/serve/request.h"
#include "attn/serve/response.h"
#include "attn/serve/static_files.h"

namespace attn::serve {
namespace {

// The API routes, each with its one method; the web files are GET routes too.
struct Route {
  std::string path, method;
};

std::vector<Route> all_routes() {
  std::vector<Route> r = {{"/v1/translate", "POST"}, {"/v1/caption", "POST"}, {"/v1/explain", "POST"},
                          {"/health", "GET"},       {"/metrics", "GET"},     {"/", "GET"}};
  for (const StaticFile& f : static_files()) r.push_back({f.path, "GET"});
  return r;
}

// httplib matches paths as regular expressions: a file name's '.' must not match any character
std::string regex_escape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// The answer to a request that failed: `text_field` names the field a decoder's
// std::invalid_argument is about.
void answer_failure(httplib::Response& res, const std::exception_ptr& e, const std::string& text_field) {
  try {
    std::rethrow_exception(e);
  } catch (const RequestError& x) {
    set_error(res, 400, x.what(), x.field());
  } catch (const QueueFull& x) {
    set_error(res, 503, x.what());
    res.set_header("Retry-After", "1");
  } catch (const image::ImageSizeError& x) {
    set_error(res, 413, std::string(x.what()) + " (--max-image-pixels)");
  } catch (const std::invalid_argument& x) {
    set_error(res, 400, x.what(), text_field);
  } catch (const std::exception& x) {
    set_error(res, 500, std::string("internal error: ") + x.what());
  }
}

// ---- what the model reads: text or images ----

std::string model_type(const RouteContext& ctx) { return ctx.model.model->config().type; }

// 404 for a route of the other kind of model, naming the one to use
void refuse_text_route(const RouteContext& ctx, const std::string& route, httplib::Response& res) {
  set_error(res, 404, "POST " + route + ": this server's model (" + model_type(ctx) +
                          ") captions images: POST /v1/caption with the image file's bytes");
}

void refuse_image_route(const RouteContext& ctx, const std::string& route, httplib::Response& res) {
  set_error(res, 404, "POST " + route + ": this server's model (" + model_type(ctx) +
                          ") translates text (POST /v1/translate); captioning needs an image model (show_attend_tell)");
}

// The request's media type without parameters, lower case; "" when absent.
std::string media_type(const httplib::Request& req) {
  std::string t = req.get_header_value("Content-Type");
  t = t.substr(0, t.find(';'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

bool is_image_type(const std::string& t) {
  return t == "image/png" || t == "image/jpeg" || t == "application/octet-stream";
}

const char* kImageTypes = "Content-Type image/png, image/jpeg or application/octet-stream";

// 415 unless the body is declared an image file (or not declared at all: the bytes tell)
bool check_image_type(const httplib::Request& req, httplib::Response& res) {
  const std::string t = media_type(req);
  if (t.empty() || is_image_type(t)) return true;
  set_error(res, 415, "POST " + req.path + ": the body must be the image file's bytes (" + kImageTypes + "), got " + config::describe_text(t));
  return false;
}

// The upload's pixels [1, 3, H, W] for the model: bytes that are not a whole
// PNG or JPEG are the request's fault (400 with the decoder's message), a
// picture over --max-image-pixels is image::ImageSizeError (413).
Tensor upload_pixels(const RouteContext& ctx, const std::string& body) {
  image::Image picture;
  try {
    picture = image::decode_image(body, "upload", ctx.options.max_image_pixels);
  } catch (const image::ImageSizeError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw RequestError("", e.what());
  }
  return decode::picture_batch(picture, *ctx.image);
}

// A request's "attention_map" (a field, or an image's query parameter) -> the
// model's map of that name ("": its default); an unknown name is the request's
// fault: RequestError on "attention_map" (400) listing the model's maps.
std::string attention_map_of(const RouteContext& ctx, const std::string& name) {
  try {
    return models::resolve_attention_map(*ctx.model.model, name);
  } catch (const std::invalid_argument& e) {
    throw RequestError("attention_map", std::string("request.attention_map: ") + e.what());
  }
}

// A text request's "self_attention_map" -> the model's encoder map of that
// name ("" stays "": the default of a model with encoder maps, none for the
// others); RequestError on "self_attention_map" (400) for an unknown name or
// a model without encoder self-attention.
std::string self_attention_map_of(const RouteContext& ctx, const std::string& name) {
  if (name.empty()) return name;
  try {
    return models::resolve_encoder_map(*ctx.model.model, name);
  } catch (const std::invalid_argument& e) {
    throw RequestError("self_attention_map", std::string("request.self_attention_map: ") + e.what());
  }
}

void handle_caption(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (!ctx.image) return refuse_image_route(ctx, "/v1/caption", res);
  if (!check_image_type(req, res)) return;
  try {
    const CaptionRequest r = parse_caption_query(req.params, ctx.options.limits);
    const std::string map = attention_map_of(ctx, r.attention_map);
    const decode::PieceCaption c = ctx.batcher.submit_caption(upload_pixels(ctx, req.body), r.beam, map).get();
    std::vector<std::string> pieces;
    for (int id : c.tokens) pieces.push_back(ctx.model.tgt_vocab->piece(id));
    res.set_content(dump(caption_json(c, pieces, ctx.model.tgt_vocab->decode(c.tokens), *ctx.image)), "application/json");
  } catch (...) {
    answer_failure(res, std::current_exception(), "");
  }
}

void handle_translate(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (ctx.image) return refuse_text_route(ctx, "/v1/translate", res);
  try {
    const TranslateRequest r = parse_translate_request(req.body, ctx.options.limits);
    check_src_pieces(r.texts, r.many ? "texts" : "text", *ctx.model.src_vocab, ctx.options.limits);
    BatchKey key{r.beam, r.alignments, false, attention_map_of(ctx, r.attention_map)};
    const std::vector<decode::Translation> tr = ctx.batcher.submit_translate(r.texts, key).get();
    nlohmann::ordered_json out;
    if (r.many) {
      out["translations"] = nlohmann::ordered_json::array();
      for (const auto& t : tr) out["translations"].push_back(translation_json(t, r.alignments));
    } else {
      out = translation_json(tr.at(0), r.alignments);
    }
    res.set_content(dump(out), "application/json");
  } catch (...) {
    answer_failure(res, std::current_exception(), "");
  }
}

// An image model's /v1/explain: the upload's bytes, the options in the query.
void handle_image_explain(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (media_type(req) == "application/json")
    return set_error(res, 415, "POST /v1/explain: this server's model (" + model_type(ctx) +
                                   ") explains images: POST the image file's bytes (" + kImageTypes +
                                   ") with ?beam=&top_k=&words= in the query");
  if (!check_image_type(req, res)) return;
  try {
    nlohmann::json r = parse_image_explain_query(req.params, ctx.options.limits);
    r["attention_map"] = attention_map_of(ctx, r["attention_map"].get<std::string>());
    const nlohmann::json out = ctx.batcher.submit_explain(std::move(r), upload_pixels(ctx, req.body)).get();
    res.set_content(out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
  } catch (...) {
    answer_failure(res, std::current_exception(), "");
  }
}

void handle_explain(const RouteContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (!ctx.options.explain) return set_error(res, 501, "/v1/explain is not available in this server");
  if (ctx.image) return handle_image_explain(ctx, req, res);
  if (is_image_type(media_type(req)) || media_type(req).rfind("image/", 0) == 0)
    return set_error(res, 415, "POST /v1/explain: this server's model (" + model_type(ctx) +
                                   ") translates text: POST {\"text\": ...} as application/json; explaining an "
                                   "image needs an image model (show_attend_tell)");
  try {
    nlohmann::json r = parse_explain_request(req.body, ctx.options.limits);
    check_src_pieces({r["text"].get<std::string>()}, "text", *ctx.model.src_vocab, ctx.options.limits);
    r["attention_map"] = attention_map_of(ctx, r["attention_map"].get<std::string>());
    r["self_attention_map"] = self_attention_map_of(ctx, r["self_attention_map"].get<std::string>());
    const nlohmann::json out = ctx.batcher.submit_explain(std::move(r)).get();
    res.set_content(out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
  } catch (...) {
    answer_failure(res, std::current_exception(), "text");
  }
}

void handle_health(const RouteContext& ctx, httplib::Response& res) {
  const models::ModelConfig& c = ctx.model.model->config();
  nlohmann::ordered_json j;
  j["status"] = "ok";
  j["model"] = ctx.options.model_name;
  j["type"] = c.type;
  j["input"] = ctx.image ? "image" : "text";
  j["attention_maps"] = ctx.model.model->attention_maps();  // the names a request's "attention_map" takes, default first
  j["encoder_attention_maps"] = ctx.model.model->encoder_attention_maps();  // "self_attention_map"'s (none: [])
  if (ctx.image) {
    j["grid"] = {ctx.image->grid_h, ctx.image->grid_w};
    j["image_size"] = {ctx.image->height, ctx.image->width};
    j["max_image_pixels"] = ctx.options.max_image_pixels;
  }
  j["src_vocab"] = ctx.model.src_vocab ? nlohmann::ordered_json(ctx.model.src_vocab->size()) : nlohmann::ordered_json(nullptr);
  j["tgt_vocab"] = ctx.model.tgt_vocab->size();
  j["max_body"] = ctx.options.max_body;
  j["max_batch"] = ctx.options.max_batch;
  j["max_wait_ms"] = ctx.options.max_wait_ms;
  j["queue"] = ctx.options.queue;
  j["queue_sentences"] = ctx.batcher.queued_sentences();
  j["explain"] = bool(ctx.options.explain);
  res.set_content(dump(j), "application/json");
}

void handle_static(const httplib::Request& req, httplib::Response& res) {
  const StaticFile* f = find_static_file(req.path);
  if (!f) return set_error(res, 404, "no such path: " + config::describe_text(req.path));
  res.set_content(reinterpret_cast<const char*>(f->data), f->size, f->content_type);
  res.set_header("Cache-Control", "no-cache");
}

// 405 for every method but `allowed` (HEAD goes with GET) on `path`
void add_method_not_allowed(httplib::Server& http, const std::string& path, const std::string& allowed) {
  auto answer = [path, allowed](const httplib::Request& req, httplib::Response& res) {
    set_error(res, 405, req.method + " " + path + ": method not allowed (allowed: " + allowed + ")");
    res.set_header("Allow", allowed == "GET" ? "GET, HEAD" : allowed);
  };
  const std::string pattern = regex_escape(path);
  if (allowed != "GET") http.Get(pattern, answer);
  if (allowed != "POST") http.Post(pattern, answer);
  http.Put(pattern, answer);
  http.Patch(pattern, answer);
  http.Delete(pattern, answer);
  http.Options(pattern, answer);
}

}  // namespace

std::vector<std::string> route_paths() {
  std::vector<std::string> out;
  for (const Route& r : all_routes()) out.push_back(r.path);
  return out;
}

void set_error(httplib::Response& res, int status, const std::string& message, const std::string& field) {
  res.status = status;
  res.set_content(error_body(message, field), "application/json");
}

void add_routes(httplib::Server& http, const RouteContext& ctx) {
  http.Post("/v1/translate", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_translate(ctx, req, res); });
  http.Post("/v1/caption", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_caption(ctx, req, res); });
  http.Post("/v1/explain", [&ctx](const httplib::Request& req, httplib::Response& res) { handle_explain(ctx, req, res); });
  http.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) { handle_health(ctx, res); });
  http.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics.prometheus(ctx.batcher.queued_sentences(), ctx.batcher.capacity()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  for (const Route& r : all_routes())
    if (r.method == "GET" && r.path != "/health" && r.path != "/metrics") http.Get(regex_escape(r.path), handle_static);
  for (const Route& r : all_routes()) add_method_not_allowed(http, r.path, r.method);
}

}  // namespace attn::serve
