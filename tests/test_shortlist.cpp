// The vocabulary shortlist (decode/shortlist.h, train/lexicon.h,
// StepDecoder::restrict_vocabulary, `attn shortlist`, `--shortlist K`):
// - every decoder restricted to a list gives, step after step, the full
//   step's log-probabilities renormalised over the list (the fused rnnsearch,
//   luong, Transformer and captioner steps in fp32 and int8, for few rows and
//   many; the default stepwise decoder of Seq2SeqModel::decoder);
// - a search with a shortlist of every token is the search without one, exactly;
//   with a short list it produces the list's tokens only;
// - IBM Model 1 finds a toy corpus's word translations from sentences whose
//   word order it never sees;
// - the lexicon file round-trips and its bad lines are named by file and line;
// - the commands: `attn shortlist RUN` learns the file from the run's corpus,
//   `translate --shortlist K` reads it, and a missing file says how to make it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/decode/search.h"
#include "attn/decode/shortlist.h"
#include "attn/models/kinds.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/random.h"
#include "attn/train/lexicon.h"
#include "caption_run.h"
#include "fused_kinds.h"
#include "reference_beam.h"
#include "serve_test_util.h"
#include "step_compare.h"

namespace attn::testing::shortlist_test {
namespace {

constexpr int64_t kVocab = kFusedVocab;
const auto& kConfigs = kFusedKindConfigs;

// Runs a full and a restricted decoder of `type` side by side for 6 steps over
// N rows of `e` (both fed the restricted one's best tokens) and returns the
// largest |restricted log p - (full log p - log sum_{list} p)| over the list.
// `stepwise`: Seq2SeqModel's default decoder (step() each step) instead of the kind's own.
double max_renormalised_gap(const models::Seq2SeqModel& m, const models::Encoded& e, int64_t B, int64_t N,
                            nn::StepWeightType type, const std::vector<int>& list, bool stepwise = false) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < N; ++i) rows.push_back(i % B);
  auto make_decoder = [&] {
    return stepwise ? m.Seq2SeqModel::decoder(e.memory, N, nullptr) : m.decoder(e.memory, N, m.prepare_decoder(N, type));
  };
  auto full = make_decoder(), part = make_decoder();
  part->restrict_vocabulary(list);
  return testing::max_renormalised_gap(*full, *part, models::select_rows(e.state, rows), rows, m.config().tgt_vocab,
                                       list, 6, m.config().specials.bos);
}

TEST(Shortlist, EveryDecoderRestrictedIsTheFullStepRenormalisedOverTheList) {
  NoGradGuard no_grad;
  std::vector<int> list;  // EOS and every third token: rows of several 32-column units, none full
  for (int id = 2; id < kVocab; id += 3) list.push_back(id);
  for (const char* json : kConfigs) {
    const auto m = make_fused_kind(json);
    const SourceBatch b = random_source_batch({6, 3, 5}, 6, 4, kVocab, 3);
    const models::Encoded e = m->encode(b.src, b.lengths);
    for (nn::StepWeightType type : {nn::StepWeightType::F32, nn::StepWeightType::I8})
      for (int64_t N : {3, 20})  // fp32 row-major below 16 rows, packed from 16
        EXPECT_LT(max_renormalised_gap(*m, e, 3, N, type, list), 2e-5) << json << " rows " << N;
  }
  const auto captioner = make_fused_kind(tiny_captioner_config(models::ImageAttention::Soft));
  Rng rng(5);
  const Tensor images = randn({2, 3, 8, 8}, rng);
  const models::Encoded e = captioner->encode(images, {4, 4});
  for (nn::StepWeightType type : {nn::StepWeightType::F32, nn::StepWeightType::I8})
    EXPECT_LT(max_renormalised_gap(*captioner, e, 2, 2, type, {2, 4, 5, 8}), 2e-5) << "captioner";
  EXPECT_LT(max_renormalised_gap(*captioner, e, 2, 2, nn::StepWeightType::F32, {2, 4, 5, 8}, true), 2e-5)
      << "the stepwise decoder";
}

TEST(Shortlist, RefusesAListOutOfOrderOrRange) {
  const auto m = make_fused_kind(kConfigs[2]);
  const SourceBatch b = random_source_batch({4}, 4, 4, kVocab, 3);
  const models::Encoded e = m->encode(b.src, b.lengths);
  auto d = m->decoder(e.memory, 1, m->prepare_decoder(1, nn::StepWeightType::F32));
  EXPECT_THROW(d->restrict_vocabulary({5, 3}), std::invalid_argument);
  EXPECT_THROW(d->restrict_vocabulary({5, int(kVocab)}), std::invalid_argument);
  d->restrict_vocabulary({2, 5});
  models::DecoderState s = d->start(e.state, 1, 4);
  EXPECT_THROW(d->step({0}, s, {m->config().specials.bos}, 3, 0), std::invalid_argument) << "k above the list";
}

// A lexicon listing every target token for every source (frequent), or K per source.
decode::Lexicon lexicon_of(int64_t V, int64_t per_source_stride) {
  decode::Lexicon lex;
  lex.src_vocab = lex.tgt_vocab = V;
  lex.best.resize(size_t(V));
  for (int t = 0; t < V; ++t) lex.frequent.emplace_back(t, V - t);
  for (int s = 0; s < V; ++s)
    for (int t = 4 + s % 3; t < V; t += int(per_source_stride)) lex.best[size_t(s)].emplace_back(t, 0.5f);
  return lex;
}

TEST(Shortlist, ASearchWithEveryTokenIsTheSearchWithoutAList) {
  const SourceBatch b = random_source_batch({6, 3, 5, 4}, 6, 4, kVocab, 8);
  for (const char* json : kConfigs) {
    const auto m = make_fused_kind(json);
    decode::SearchOptions o;
    o.beam = 3, o.nbest = 2;
    const auto want = decode::search(*m, b.src, b.lengths, o);
    o.shortlist = std::make_shared<decode::Shortlist>(lexicon_of(kVocab, 1), 1, kVocab, 2);
    const auto got = decode::search(*m, b.src, b.lengths, o);
    for (size_t i = 0; i < want.size(); ++i)
      for (size_t h = 0; h < want[i].hypotheses.size(); ++h) {
        EXPECT_EQ(got[i].hypotheses[h].tokens, want[i].hypotheses[h].tokens) << json;
        EXPECT_EQ(got[i].hypotheses[h].score, want[i].hypotheses[h].score) << json;
      }
    // a short list: each source piece's few translations and EOS, nothing else
    o.shortlist = std::make_shared<decode::Shortlist>(lexicon_of(kVocab, 9), 2, 0, 2);
    const std::vector<int> allowed = o.shortlist->candidates(b.src, b.lengths);
    EXPECT_LT(allowed.size(), size_t(kVocab) / 3);
    for (const auto& r : decode::search(*m, b.src, b.lengths, o))
      for (const auto& h : r.hypotheses)
        for (int t : h.tokens) EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), t)) << t;
  }
}

TEST(Shortlist, CandidatesAreEosTheFrequentAndEachSourcePiecesBest) {
  const decode::Shortlist s(lexicon_of(kVocab, 9), 2, 3, 2);
  Tensor src = Tensor::zeros({2, 3});
  src.data()[0] = 7, src.data()[1] = 8, src.data()[2] = 30;  // row 0: 7 8 (30 is padding)
  src.data()[3] = 9;                                         // row 1: 9
  const std::vector<int> got = s.candidates(src, {2, 1});
  // EOS 2; frequent 0 1 2; 7: 5 14; 8: 6 15; 9: 4 13
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 4, 5, 6, 13, 14, 15}));
  src.data()[3] = float(kVocab);
  EXPECT_THROW(s.candidates(src, {2, 1}), std::invalid_argument);
  EXPECT_THROW(decode::Shortlist(lexicon_of(kVocab, 9), 0, 3, 2), std::invalid_argument);
}

TEST(Shortlist, IbmModel1FindsEachWordsTranslation) {
  // source word s (4..23) translates to target word 4 + (s * 7) % 20; sentences of
  // 3-6 words, the target in reversed order plus a function word (24) at random places
  Rng rng(3);
  data::EncodedCorpus c;
  for (int64_t p = 0; p < 2000; ++p) {
    std::vector<int> src, tgt;
    const int64_t len = 3 + int64_t(rng.below(4));
    for (int64_t j = 0; j < len; ++j) src.push_back(4 + int(rng.below(20)));
    for (auto it = src.rbegin(); it != src.rend(); ++it) tgt.push_back(4 + ((*it - 4) * 7) % 20);
    tgt.insert(tgt.begin() + int64_t(rng.below(uint64_t(tgt.size()))), 24);
    c.src.push_back(src), c.tgt.push_back(tgt), c.line.push_back(p + 1);
  }
  const decode::Lexicon lex = train::learn_lexicon(c, 30, 30);
  for (int s = 4; s < 24; ++s) {
    ASSERT_FALSE(lex.best[size_t(s)].empty()) << s;
    EXPECT_EQ(lex.best[size_t(s)][0].first, 4 + ((s - 4) * 7) % 20) << "source " << s;
    EXPECT_GT(lex.best[size_t(s)][0].second, 0.5f) << "source " << s;
  }
  EXPECT_EQ(lex.frequent[0].first, 24);  // in every sentence
  EXPECT_EQ(lex.frequent[0].second, 2000);
  c.tgt[5].push_back(30);
  EXPECT_THROW(train::learn_lexicon(c, 30, 30), std::invalid_argument);
}

TEST(Shortlist, TheFileRoundTripsAndNamesABadLine) {
  TempDir dir("shortlist_file");
  const decode::TranslationModel& tm = serve_toy_model();
  const data::SubwordVocab &sv = *tm.src_vocab, &tv = *tm.tgt_vocab;
  decode::Lexicon lex;
  lex.src_vocab = sv.size(), lex.tgt_vocab = tv.size();
  lex.best.resize(size_t(sv.size()));
  lex.frequent = {{5, 100}, {6, 50}};
  lex.best[7] = {{8, 0.75f}, {9, 0.125f}};
  lex.best[10] = {{11, 1.0f}};
  const std::string path = dir.path + "/shortlist.tsv";
  decode::write_lexicon(path, lex, sv, tv, {"a test"});
  const decode::Lexicon back = decode::read_lexicon(path, sv, tv);
  EXPECT_EQ(back.frequent, lex.frequent);
  EXPECT_EQ(back.best, lex.best);
  const auto refused = [&](const std::string& line, int64_t at, const std::string& why) {
    std::ofstream(path) << "# x\nfrequent\t" << tv.piece(5) << "\t3\n" << line << "\n";
    try {
      (void)decode::read_lexicon(path, sv, tv);
      ADD_FAILURE() << line << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":" + std::to_string(at) + ": "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused("lex\t" + sv.piece(7) + "\tno-such-piece\t0.5", 3, "unknown target piece");
  refused("lex\t" + sv.piece(7) + "\t" + tv.piece(8) + "\t1.5", 3, "outside [0, 1]");
  refused("lex\t" + sv.piece(7) + "\t" + tv.piece(8) + "\tx", 3, "bad probability");
  refused("frequent\t" + tv.piece(6) + "\t9", 3, "out of order");
  refused("lex\t" + sv.piece(7), 3, "expected");
}

TEST(Shortlist, TheCommandsLearnAndReadTheFile) {
  TempDir dir("shortlist_cli");
  // a run directory of the toy model whose config names corpora that exist
  const std::string run = dir.path + "/run";
  std::filesystem::create_directories(run);
  for (const char* f : {"config.json", "model.safetensors", "vocab.src.model", "vocab.tgt.model"})
    std::filesystem::copy_file(serve_toy_run() + "/" + f, run + "/" + f);
  write_toy(dir.path, "train", 500, 21);
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(serve_toy_run() + "/train_config.json"));
  cfg["data"]["train_src"] = dir.path + "/train.en", cfg["data"]["train_tgt"] = dir.path + "/train.fr";
  cfg["data"]["valid_src"] = dir.path + "/train.en", cfg["data"]["valid_tgt"] = dir.path + "/train.fr";
  std::ofstream(run + "/train_config.json") << cfg.dump();
  const std::string text = "le chat noir\n";
  const CommandResult missing = run_attn("translate -m " + run + " --shortlist 5", dir.path, text);
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("shortlist.tsv"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("attn shortlist"), std::string::npos) << missing.err;
  const CommandResult learn = run_attn("shortlist " + run, dir.path);
  ASSERT_EQ(learn.status, 0) << learn.err;
  EXPECT_NE(learn.out.find("500 pairs"), std::string::npos) << learn.out;
  ASSERT_TRUE(std::filesystem::exists(run + "/shortlist.tsv"));
  std::vector<std::string> inputs;
  for (const std::string& s : data::reversal_corpus(8, 77).src) inputs.push_back(s);
  std::string lines;
  for (const std::string& s : inputs) lines += s + "\n";
  const CommandResult full = run_attn("translate -m " + run + " -b 3", dir.path, lines);
  const CommandResult listed = run_attn("translate -m " + run + " -b 3 --shortlist 10", dir.path, lines);
  ASSERT_EQ(listed.status, 0) << listed.err;
  // the toy task copies words: each source word's translation is on its list, so the output stays
  EXPECT_EQ(listed.out, full.out);
  // out-of-range options are refused by name before anything is read or written
  for (const std::string& bad : {"shortlist " + run + " --min-prob 1.5", "shortlist " + run + " --min-prob -0.1",
                                 std::string("bench decode --shortlist-frequent -1 --no-peers")}) {
    const CommandResult r = run_attn(bad, dir.path);
    EXPECT_NE(r.status, 0) << bad;
    EXPECT_NE(r.err.find(bad.find("min-prob") != std::string::npos ? "--min-prob" : "--shortlist-frequent"),
              std::string::npos)
        << bad << ": " << r.err;
  }
}

}  // namespace
}  // namespace attn::testing::shortlist_test
