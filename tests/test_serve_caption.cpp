// `attn serve` over an image captioner (issue 15): POST /v1/caption answers
// an uploaded PNG with what `attn caption` prints for the same file, and each
// word's attention over the grid; bad bytes, an oversized picture, a body over
// the limit and a route of the other kind of model are refused with clear
// errors; uploads from concurrent clients are captioned together on the one
// decoding worker, each as it is alone.
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <nlohmann/json.hpp>

#include "attn/decode/captioner.h"
#include "attn/image/codec.h"
#include "serve_test_util.h"

namespace attn::testing::serve_caption_test {
namespace {

using nlohmann::json;

const decode::TranslationModel& caption_model() {
  static const decode::TranslationModel m = decode::load_model_dir(serve_caption_run().run);
  return m;
}

serve::ServerOptions options() {
  serve::ServerOptions o;
  o.threads = 1;
  return o;
}

httplib::Result post_image(httplib::Client& c, const std::string& path, const std::string& bytes,
                           const std::string& type = "image/png") {
  return c.Post(path.c_str(), bytes, type.c_str());
}

// What `attn caption -m RUN IMAGE [--beam K]` prints for one file: the caption after the tab.
std::string attn_caption(const std::string& image, int beam) {
  TempDir dir("serve_caption_cli");
  const CommandResult r =
      run_attn("caption -m " + serve_caption_run().run + " --beam " + std::to_string(beam) + " " + image, dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string prefix = image + "\t";
  EXPECT_EQ(r.out.rfind(prefix, 0), 0u) << r.out;
  std::string caption = r.out.substr(std::min(prefix.size(), r.out.size()));
  if (!caption.empty() && caption.back() == '\n') caption.pop_back();
  return caption;
}

// The words and per-word attention [T, cells] the model gives the file alone, in this process.
decode::WordCaption words_in_process(const std::string& bytes, int beam) {
  const auto& m = caption_model();
  const decode::ImageModelInput in = *decode::image_model_input(m.model->config());
  decode::CaptionOptions o;
  o.beam = beam;
  const decode::PieceCaption c =
      decode::caption_pixels(*m.model, decode::picture_batch(image::decode_image(bytes, "test"), in), in, o).at(0);
  std::vector<std::string> pieces;
  for (int id : c.tokens) pieces.push_back(m.tgt_vocab->piece(id));
  return decode::merge_pieces(pieces, c.attention, in.grid_h * in.grid_w);
}

TEST(ServeCaption, CaptionRouteAnswersWhatAttnCaptionPrints) {
  const CaptionRun& run = serve_caption_run();
  ASSERT_GE(run.images.size(), 3u);
  LiveServer s(caption_model(), options());
  auto c = s.client();
  const json h = json::parse(c->Get("/health")->body);
  EXPECT_EQ(h["type"], "show_attend_tell");
  EXPECT_EQ(h["input"], "image");
  EXPECT_EQ(h["grid"], json::array({4, 4}));
  EXPECT_EQ(h["image_size"], json::array({32, 32}));
  EXPECT_TRUE(h["src_vocab"].is_null());
  EXPECT_EQ(h["max_body"], 65536);
  std::set<std::string> captions;
  for (const auto& [image, beam] : std::vector<std::pair<std::string, int>>{
           {run.images[0], 1}, {run.images[1], 1}, {run.images[2], 1}, {run.images[0], 3}}) {
    const std::string bytes = read_bytes(image);
    const std::string query = beam == 1 ? "" : "?beam=" + std::to_string(beam);
    auto r = post_image(*c, "/v1/caption" + query, bytes, beam == 1 ? "image/png" : "application/octet-stream");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    const json a = json::parse(r->body);
    const std::string what = image + " beam " + std::to_string(beam);
    EXPECT_EQ(a["caption"], attn_caption(image, beam)) << what;
    captions.insert(a["caption"].get<std::string>());
    EXPECT_EQ(a["grid"], json::array({4, 4}));
    EXPECT_EQ(a["image_size"], json::array({32, 32}));
    EXPECT_FALSE(a["tgt_tokens"].empty()) << what;
    const decode::WordCaption want = words_in_process(bytes, beam);
    ASSERT_FALSE(want.words.empty()) << what;
    EXPECT_EQ(a["words"], want.words) << what;
    ASSERT_EQ(a["attention"].size(), want.words.size()) << what;
    for (size_t t = 0; t < want.words.size(); ++t) {
      const json& row = a["attention"][t];
      ASSERT_EQ(row.size(), 16u) << what << " word " << t;
      double sum = 0;
      for (size_t g = 0; g < 16; ++g) {
        const double w = row[g].get<double>();
        EXPECT_GE(w, 0.0);
        EXPECT_NEAR(w, want.attention[t * 16 + g], 1e-6) << what << " word " << t << " cell " << g;
        sum += w;
      }
      EXPECT_NEAR(sum, 1.0, 1e-4) << what << " word " << t;
    }
  }
  EXPECT_GE(captions.size(), 2u) << "three different scenes, one caption: the test would not see a mix-up";
}

// an error answer whose message holds `says`
void expect_refusal(const httplib::Result& r, int status, const json& field, const std::string& says) {
  expect_error(r, status, field, says, says);
}

TEST(ServeCaption, BadUploadsAndWrongRoutesAreRefused) {
  const std::string png = read_bytes(serve_caption_run().images[0]);
  auto o = options();
  o.max_image_pixels = 64 * 64;
  o.max_body = 20000;
  o.explain = [](const json&, const Tensor&) { return json{{"explained", true}}; };
  LiveServer s(caption_model(), o);
  auto c = s.client();
  expect_refusal(post_image(*c, "/v1/caption", "hello world"), 400, nullptr,
               "upload: not a PNG or JPEG file (starts with 68 65 6c 6c)");
  expect_refusal(post_image(*c, "/v1/caption", png.substr(0, png.size() / 2)), 400, nullptr, "upload: PNG: ");
  expect_refusal(post_image(*c, "/v1/caption", "\xff\xd8\xff\xe0 not really"), 400, nullptr, "upload: JPEG: ");
  expect_refusal(post_image(*c, "/v1/caption", ""), 400, nullptr, "upload: empty file");
  expect_refusal(post_image(*c, "/v1/caption", png, "text/plain"), 415, nullptr, "image/png, image/jpeg");
  expect_refusal(post_image(*c, "/v1/caption?beam=0", png), 400, "beam", "query.beam");
  expect_refusal(post_image(*c, "/v1/caption?beam=17", png), 400, "beam", "[1, 16]");
  expect_refusal(post_image(*c, "/v1/caption?beam=2x", png), 400, "beam", "got \"2x\"");
  expect_refusal(post_image(*c, "/v1/caption?beam=2&beam=3", png), 400, "beam", "more than once");
  expect_refusal(post_image(*c, "/v1/caption?bem=2", png), 400, "bem", "unknown parameter");
  // a picture over --max-image-pixels: 413 before its pixels are decoded; at the limit it is captioned
  const std::string big = image::encode_png(image::Image(65, 64, 0.5f)), fits = image::encode_png(image::Image(64, 64, 0.5f));
  expect_refusal(post_image(*c, "/v1/caption", big), 413, nullptr, "65 x 64 (1 to 4096 pixels) (--max-image-pixels)");
  auto r = post_image(*c, "/v1/caption", fits);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // a compressed upload: 415 before it is read (httplib 0.11 would unpack it past --max-body)
  auto gz = s.client();
  gz->set_compress(true);
  expect_refusal(post_image(*gz, "/v1/caption", png), 415, nullptr, "Content-Encoding \"gzip\" is not accepted");
  // a body over --max-body: 413 before the route
  expect_refusal(post_image(*c, "/v1/caption", png + std::string(20001 - png.size(), '\0')), 413, nullptr, "--max-body");
  // the routes of a text model, and JSON to an image model's explain
  expect_refusal(post_json(*c, "/v1/translate", R"({"text": "a red circle"})"), 404, nullptr,
               "model (show_attend_tell) captions images: POST /v1/caption");
  expect_refusal(post_json(*c, "/v1/explain", R"({"text": "a red circle"})"), 415, nullptr, "explains images");
  expect_refusal(post_image(*c, "/v1/explain?top_k=0", png), 400, "top_k", "query.top_k");
  expect_refusal(post_image(*c, "/v1/explain?words=maybe", png), 400, "words", "true or false");
  expect_refusal(post_image(*c, "/v1/explain", "GIF89a"), 400, nullptr, "upload: not a PNG or JPEG");
  expect_refusal(c->Get("/v1/caption"), 405, nullptr, "method not allowed");
  // after all that, it still captions and explains
  r = post_image(*c, "/v1/caption", png);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = post_image(*c, "/v1/explain?words=true", png);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;

  // a text model: no captions, no images to explain
  auto t = options();
  t.explain = o.explain;
  LiveServer text(serve_toy_model(), t);
  auto tc = text.client();
  expect_refusal(post_image(*tc, "/v1/caption", png), 404, nullptr, "model (rnnsearch) translates text");
  expect_refusal(post_image(*tc, "/v1/explain", png), 415, nullptr, "translates text: POST {\"text\": ...}");
  EXPECT_EQ(json::parse(tc->Get("/health")->body)["input"], "text");
}

// Six uploads at once, with batches waiting up to 0.5 s for more: fewer than
// six batches run, and each client gets the caption its image gets alone.
TEST(ServeCaption, ConcurrentUploadsAreCaptionedTogether) {
  const CaptionRun& run = serve_caption_run();
  auto o = options();
  o.max_wait_ms = 500;
  LiveServer s(caption_model(), o);
  std::vector<std::string> bytes, alone;
  for (size_t i = 0; i < 6; ++i) {
    bytes.push_back(read_bytes(run.images[i]));
    std::string words;
    for (const std::string& w : words_in_process(bytes.back(), 1).words) words += (words.empty() ? "" : " ") + w;
    alone.push_back(words);
  }
  std::vector<std::future<json>> answers;
  for (size_t i = 0; i < bytes.size(); ++i)
    answers.push_back(std::async(std::launch::async, [&, i] {
      auto ci = s.client();
      auto r = post_image(*ci, "/v1/caption", bytes[i]);
      return r && r->status == 200 ? json::parse(r->body) : json();
    }));
  for (size_t i = 0; i < answers.size(); ++i) {
    const json a = answers[i].get();
    ASSERT_TRUE(a.is_object()) << i;
    std::string words;
    for (const auto& w : a["words"]) words += (words.empty() ? "" : " ") + w.get<std::string>();
    EXPECT_EQ(words, alone[i]) << "image " << i;
  }
  const std::string m = s.client()->Get("/metrics")->body;
  EXPECT_EQ(metric(m, "attn_batch_sentences_sum"), 6) << m;
  EXPECT_LT(metric(m, "attn_batch_sentences_count"), 6) << m;
  EXPECT_EQ(metric(m, R"(attn_http_requests_total{path="/v1/caption",status="200"})"), 6) << m;
  std::printf("6 concurrent uploads: %g batches\n", metric(m, "attn_batch_sentences_count"));
}

}  // namespace
}  // namespace attn::testing::serve_caption_test
