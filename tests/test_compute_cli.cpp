// --compute on the commands (cli/search_options.h): `attn translate`, `attn
// explain` and `attn serve` run an rnnsearch and a Transformer run in int8 and
// bf16 and give fp32's translations (these toy models' top tokens are far
// apart: a rounding that flips one would be a bug); auto resolves to what
// `attn --version` says; an unknown type stops at parse time naming the
// option; the captioner refuses int8 before it reads any input.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/data/toy_tasks.h"
#include "serve_test_util.h"

namespace attn::testing {
namespace {

using json = nlohmann::json;

std::string sentences(int64_t n) {
  std::string text;
  for (const std::string& s : data::reversal_corpus(n, 71).src) text += s + "\n";
  return text;
}

TEST(ComputeCli, TranslateAndExplainGiveFp32sOutputInEveryType) {
  TempDir dir("compute_cli");
  const std::string text = sentences(12);
  for (const std::string& run : {serve_toy_run(), serve_transformer_run()}) {
    // 2-best lines "i ||| translation ||| score": the same best translations, and scores
    // that show the type was applied (rounded products move them a little)
    const std::string base = "translate -m " + run + " --threads 1 -b 4 -n 2";
    const CommandResult fp32 = run_attn(base, dir.path, text);
    ASSERT_EQ(fp32.status, 0) << fp32.err;
    const auto fields = [](const std::string& out) {
      std::vector<std::pair<std::string, double>> lines;  // (i ||| translation, score)
      std::istringstream in(out);
      for (std::string l; std::getline(in, l);) {
        const size_t cut = l.rfind(" ||| ");
        lines.emplace_back(l.substr(0, cut), std::stod(l.substr(cut + 5)));
      }
      return lines;
    };
    const auto want = fields(fp32.out);
    ASSERT_EQ(want.size(), 24u);  // 12 sentences x 2 hypotheses
    for (const std::string type : {"int8", "bf16", "auto"}) {
      const CommandResult r = run_attn(base + " --compute " + type, dir.path, text);
      ASSERT_EQ(r.status, 0) << type << ": " << r.err;
      const auto got = fields(r.out);
      ASSERT_EQ(got.size(), want.size()) << r.out;
      double gap = 0;
      for (size_t i = 0; i < got.size(); i += 2) {  // each sentence's best (its runner-up may trade places)
        EXPECT_EQ(got[i].first, want[i].first) << run << " " << type;
        gap = std::max(gap, std::fabs(got[i].second - want[i].second));
      }
      // auto is fp32 on a CPU (or under an ATTN_ISA cap) without VNNI or AVX-512 BF16
      const bool reduced = type != "auto" || cpu::native_int8() || cpu::native_bf16();
      if (reduced) EXPECT_GT(gap, 0.0) << run << " " << type << ": fp32's scores exactly, so the type was not applied";
      if (!reduced) EXPECT_EQ(gap, 0.0) << run << " auto resolved to fp32 here";
      EXPECT_LT(gap, 0.05) << run << " " << type;
    }
    const std::string one = data::reversal_corpus(1, 72).src[0] + "\n";
    const CommandResult e32 = run_attn("explain -m " + run + " --threads 1 --format json", dir.path, one);
    const CommandResult e8 = run_attn("explain -m " + run + " --threads 1 --format json --compute int8", dir.path, one);
    ASSERT_EQ(e8.status, 0) << e8.err;
    EXPECT_EQ(json::parse(e8.out)["tgt_tokens"], json::parse(e32.out)["tgt_tokens"]) << run;
  }
  const CommandResult bad = run_attn("translate -m " + serve_toy_run() + " --compute int4", dir.path, text);
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("--compute"), std::string::npos) << bad.err;
}

TEST(ComputeCli, VersionSaysWhatAutoPicks) {
  TempDir dir("compute_version");
  const CommandResult v = run_attn("--version", dir.path, "");
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_NE(v.out.find("dot-product instructions: "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("--compute auto: "), std::string::npos) << v.out;
}

TEST(ComputeCli, ServeTranslatesInInt8) {
  ServeProcess p({"-m", serve_transformer_run(), "--port", "0", "--threads", "1", "--compute", "int8"});
  const int port = listening_port(p);
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  const std::vector<std::string> texts = data::reversal_corpus(3, 73).src;
  const httplib::Result r = post_json(c, "/v1/translate", json{{"texts", texts}, {"beam", 2}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  TempDir dir("compute_serve");
  std::string text;
  for (const std::string& s : texts) text += s + "\n";
  const CommandResult fp32 = run_attn("translate -m " + serve_transformer_run() + " --threads 1 -b 2", dir.path, text);
  std::string served;
  const json answer = json::parse(r->body);
  for (const json& t : answer.at("translations")) served += t.at("translation").get<std::string>() + "\n";
  EXPECT_EQ(served, fp32.out) << r->body;
  const httplib::Result e = post_json(c, "/v1/explain", json{{"text", texts[0]}}.dump());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 200) << e->body;
}

TEST(ComputeCli, TheCaptionerRefusesInt8BeforeReadingInput) {
  ServeProcess p({"-m", serve_caption_run().run, "--port", "0", "--compute", "int8"});
  EXPECT_EQ(p.wait_exit(60), 1);
  std::string all;
  for (std::string l = p.line(); !l.empty(); l = p.line()) all += l;
  EXPECT_NE(all.find("show_attend_tell"), std::string::npos) << all;
  ServeProcess automatic({"-m", serve_caption_run().run, "--port", "0", "--compute", "auto"});  // auto: fp32 here
  EXPECT_GT(listening_port(automatic), 0);
}

}  // namespace
}  // namespace attn::testing
