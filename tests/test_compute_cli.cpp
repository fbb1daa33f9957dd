// --compute on the commands (cli/search_options.h): `attn translate`, `attn
// explain` and `attn serve` run an rnnsearch and a Transformer run in int8 and
// bf16 and mostly give fp32's translations (see the test for how many may
// change); auto resolves to what
// `attn --version` says; an unknown type stops at parse time naming the
// option; `attn serve` starts on a captioner run with --compute int8 and
// answers a caption and an explain request.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/data/toy_tasks.h"
#include "serve_test_util.h"

namespace attn::testing::compute_cli_test {
namespace {

using json = nlohmann::json;

std::string sentences(int64_t n) {
  std::string text;
  for (const std::string& s : data::reversal_corpus(n, 71).src) text += s + "\n";
  return text;
}

// `translate -n 4` lines "i ||| translation ||| score" as {"i ||| translation": score}
std::map<std::string, double> nbest_scores(const std::string& out) {
  std::map<std::string, double> scores;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    const size_t cut = l.rfind(" ||| ");
    scores[l.substr(0, cut)] = std::stod(l.substr(cut + 5));
  }
  return scores;
}

// each sentence's best line ("i ||| translation") in `translate -n` output
std::vector<std::string> best_lines(const std::string& out) {
  std::vector<std::string> best;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    const std::string key = l.substr(0, l.rfind(" ||| "));
    const std::string i = key.substr(0, key.find(" ||| "));
    if (best.empty() || best.back().substr(0, best.back().find(" ||| ")) != i) best.push_back(key);
  }
  return best;
}

TEST(ComputeCli, TranslateAndExplainGiveFp32sOutputInEveryType) {
  TempDir dir("compute_cli");
  const std::string text = sentences(12);
  for (const std::string& run : {serve_toy_run(), serve_transformer_run()}) {
    // 4-best lists: a reduced type mostly keeps fp32's best translation (the toy
    // rnnsearch's margins are wide: at most one flip; the toy Transformer, 3 epochs,
    // has near ties that int8's rounding, compounded over the steps, may reorder,
    // and an ASan build trains it to other ties: at most 3 of 12); every hypothesis
    // both lists hold moves by less than 0.05, and by more than 0 (else the type was
    // not applied)
    const bool transformer = run == serve_transformer_run();
    const std::string base = "translate -m " + run + " --threads 1 -b 4 -n 4";
    const CommandResult fp32 = run_attn(base, dir.path, text);
    ASSERT_EQ(fp32.status, 0) << fp32.err;
    const std::map<std::string, double> want = nbest_scores(fp32.out);
    const std::vector<std::string> want_best = best_lines(fp32.out);
    ASSERT_EQ(want_best.size(), 12u);
    for (const std::string type : {"int8", "bf16", "auto"}) {
      const CommandResult r = run_attn(base + " --compute " + type, dir.path, text);
      ASSERT_EQ(r.status, 0) << type << ": " << r.err;
      const std::vector<std::string> got_best = best_lines(r.out);
      ASSERT_EQ(got_best.size(), want_best.size()) << r.out;
      int flips = 0;
      for (size_t i = 0; i < got_best.size(); ++i) flips += got_best[i] != want_best[i];
      EXPECT_LE(flips, transformer ? 3 : 1) << run << " " << type << "\nfp32:\n" << fp32.out << "\n" << type << ":\n" << r.out;
      double gap = 0;
      for (const auto& [line, score] : nbest_scores(r.out))
        if (want.count(line)) gap = std::max(gap, std::fabs(score - want.at(line)));
      // auto is fp32 on a CPU (or under an ATTN_ISA cap) without VNNI or AVX-512 BF16
      const bool reduced = type != "auto" || cpu::native_int8() || cpu::native_bf16();
      if (reduced) EXPECT_GT(gap, 0.0) << run << " " << type << ": fp32's scores exactly, so the type was not applied";
      if (!reduced) EXPECT_EQ(gap, 0.0) << run << " auto resolved to fp32 here";
      EXPECT_LT(gap, 0.05) << run << " " << type;
    }
    // explain's greedy search in int8 is translate's greedy search in int8
    const std::string one = data::reversal_corpus(1, 72).src[0] + "\n";
    const CommandResult e8 = run_attn("explain -m " + run + " --threads 1 --format json --compute int8", dir.path, one);
    ASSERT_EQ(e8.status, 0) << e8.err;
    const CommandResult t8 = run_attn("translate -m " + run + " --threads 1 -b 1 --compute int8", dir.path, one);
    ASSERT_EQ(t8.status, 0) << t8.err;
    EXPECT_EQ(json::parse(e8.out)["translation"].get<std::string>() + "\n", t8.out) << run;
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
  // the server's int8 search is translate's int8 search
  const CommandResult int8 = run_attn("translate -m " + serve_transformer_run() + " --threads 1 -b 2 --compute int8", dir.path, text);
  std::string served;
  const json answer = json::parse(r->body);
  for (const json& t : answer.at("translations")) served += t.at("translation").get<std::string>() + "\n";
  EXPECT_EQ(served, int8.out) << r->body;
  const httplib::Result e = post_json(c, "/v1/explain", json{{"text", texts[0]}}.dump());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 200) << e->body;
}

// The captioner has a search step in every type (show_attend_tell_search.h):
// int8 is accepted, no longer refused before any input is read, and the
// searches of /v1/caption (the server's caption batches) and /v1/explain run in it.
TEST(ComputeCli, ServeStartsOnACaptionerInInt8) {
  const CaptionRun& run = serve_caption_run();
  ASSERT_FALSE(run.images.empty());
  ServeProcess p({"-m", run.run, "--port", "0", "--threads", "1", "--compute", "int8"});
  const int port = listening_port(p);
  ASSERT_GT(port, 0);
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  const std::string png = read_bytes(run.images[0]);
  const httplib::Result r = c.Post("/v1/caption", png, "image/png");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_FALSE(json::parse(r->body).at("caption").get<std::string>().empty()) << r->body;
  const httplib::Result e = c.Post("/v1/explain", png, "image/png");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 200) << e->body;
  ServeProcess automatic({"-m", run.run, "--port", "0", "--compute", "auto"});
  EXPECT_GT(listening_port(automatic), 0);
}

}  // namespace
}  // namespace attn::testing::compute_cli_test
