// Text data pipeline: UTF-8, plain/gzip line reading, parallel corpora,
// SentencePiece vocabularies, length filtering and token-budget batching.
// Real text comes from tests/data/tatoeba-eng-fra-2000.tsv (see its README).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/cpu/threading.h"
#include "attn/data/batcher.h"
#include "attn/data/encoded_corpus.h"
#include "attn/data/line_reader.h"
#include "attn/data/parallel_corpus.h"
#include "attn/data/utf8.h"
#include "attn/data/vocab.h"
#include "attn/tensor/random.h"

using namespace attn;
using namespace attn::data;
namespace fs = std::filesystem;

namespace {

const std::string kSample = std::string(ATTN_TEST_DIR) + "/data/tatoeba-eng-fra-2000.tsv";

// A fresh directory per test, removed afterwards.
class DataDir {
public:
  DataDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / (std::string("attn_test_data_") + info->test_suite_name() + "_" +
                                         info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~DataDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  fs::path path_;
};

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string read_raw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The exception message of `fn`, or "" when it does not throw E.
template <class E, class Fn>
std::string message_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ---------------------------------------------------------------- UTF-8

TEST(Utf8, ValidatesShortestFormScalarValues) {
  EXPECT_TRUE(is_valid_utf8("plain ASCII"));
  EXPECT_TRUE(is_valid_utf8("é ţ € 𝄞"));             // 2, 2, 3 and 4 byte forms
  EXPECT_EQ(find_invalid_utf8("ab\xff"), 2u);         // never a lead byte
  EXPECT_EQ(find_invalid_utf8("a\x80"), 1u);          // lone continuation
  EXPECT_EQ(find_invalid_utf8("\xc3"), 0u);           // truncated sequence
  EXPECT_EQ(find_invalid_utf8("\xc0\xaf"), 0u);       // overlong "/"
  EXPECT_EQ(find_invalid_utf8("x\xed\xa0\x80"), 1u);  // UTF-16 surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  const std::string text = "Ça va ? — oui 𝄞";
  EXPECT_EQ(encode_utf8(decode_utf8(text)), text);
  EXPECT_EQ(decode_utf8("é𝄞").size(), 2u);
  EXPECT_THROW(decode_utf8("\xe2\x82"), std::invalid_argument);
}

// ---------------------------------------------------------------- line reading

TEST(LineReader, PlainAndGzipGiveTheSameLines) {
  DataDir dir;
  const std::vector<std::string> lines = {"first line", "", "ligne trois : été", "last"};
  write_lines(dir.file("a.txt"), lines, /*gzip=*/false);
  write_lines(dir.file("a.txt.gz"), lines, /*gzip=*/true);
  // the .gz really is gzip (magic 1f 8b) and the plain file is not
  EXPECT_EQ(read_raw(dir.file("a.txt.gz")).substr(0, 2), "\x1f\x8b");
  EXPECT_EQ(read_raw(dir.file("a.txt")), "first line\n\nligne trois : été\nlast\n");
  EXPECT_EQ(read_lines(dir.file("a.txt")), lines);
  EXPECT_EQ(read_lines(dir.file("a.txt.gz")), lines);
  // detection is by content: a gzip file without the .gz suffix reads the same
  fs::copy_file(dir.file("a.txt.gz"), dir.file("compressed.txt"));
  EXPECT_EQ(read_lines(dir.file("compressed.txt")), lines);
}

TEST(LineReader, LineEndings) {
  DataDir dir;
  write_raw(dir.file("crlf.txt"), "a\r\nb\r\n");
  EXPECT_EQ(read_lines(dir.file("crlf.txt")), (std::vector<std::string>{"a", "b"}));
  write_raw(dir.file("nofinal.txt"), "a\nb");
  EXPECT_EQ(read_lines(dir.file("nofinal.txt")), (std::vector<std::string>{"a", "b"}));
  write_raw(dir.file("empty.txt"), "");
  EXPECT_TRUE(read_lines(dir.file("empty.txt")).empty());
  write_raw(dir.file("blank.txt"), "\n\n");
  EXPECT_EQ(read_lines(dir.file("blank.txt")), (std::vector<std::string>{"", ""}));
  // a line longer than the 64 KiB read buffer survives the chunk boundary
  const std::string long_line(200000, 'x');
  write_lines(dir.file("long.gz"), {long_line, "y"}, true);
  EXPECT_EQ(read_lines(dir.file("long.gz")), (std::vector<std::string>{long_line, "y"}));
}

TEST(LineReader, InvalidUtf8NamesFileLineAndByte) {
  DataDir dir;
  const std::string path = dir.file("bad.txt.gz");
  write_lines(path, {"ok", "fine", "caf\xe9 latin-1", "never read"}, true);
  const std::string msg = message_of<std::invalid_argument>([&] { read_lines(path); });
  EXPECT_TRUE(contains(msg, path + ":3: invalid UTF-8 at byte 3")) << msg;
}

TEST(LineReader, MissingAndTruncatedFilesThrow) {
  DataDir dir;
  const std::string missing = dir.file("nope.txt");
  EXPECT_TRUE(contains(message_of<std::runtime_error>([&] { read_lines(missing); }), missing));
  std::vector<std::string> many(5000, "some text that compresses");
  write_lines(dir.file("full.gz"), many, true);
  const std::string bytes = read_raw(dir.file("full.gz"));
  write_raw(dir.file("cut.gz"), bytes.substr(0, bytes.size() / 2));
  const std::string msg = message_of<std::runtime_error>([&] { read_lines(dir.file("cut.gz")); });
  EXPECT_TRUE(contains(msg, "cut.gz")) << msg;
}

// ---------------------------------------------------------------- parallel corpora

TEST(ParallelCorpus, TwoFilesPlainAndGzip) {
  DataDir dir;
  write_lines(dir.file("c.en"), {"Hello.", "Thanks!"}, false);
  write_lines(dir.file("c.fr.gz"), {"Bonjour.", "Merci !"}, true);
  const ParallelCorpus c = read_parallel(dir.file("c.en"), dir.file("c.fr.gz"));
  ASSERT_EQ(c.size(), 2);
  EXPECT_EQ(c.src[1], "Thanks!");
  EXPECT_EQ(c.tgt[1], "Merci !");
}

TEST(ParallelCorpus, LineCountMismatchNamesBothFilesAndCounts) {
  DataDir dir;
  write_lines(dir.file("m.en"), {"a", "b", "c"}, false);
  write_lines(dir.file("m.fr.gz"), {"a", "b"}, true);
  const std::string msg =
      message_of<std::invalid_argument>([&] { read_parallel(dir.file("m.en"), dir.file("m.fr.gz")); });
  EXPECT_TRUE(contains(msg, "'" + dir.file("m.en") + "' has 3 lines")) << msg;
  EXPECT_TRUE(contains(msg, "'" + dir.file("m.fr.gz") + "' has 2 lines")) << msg;
}

TEST(ParallelCorpus, TsvSampleAndColumns) {
  const ParallelCorpus c = read_tsv(kSample);
  ASSERT_EQ(c.size(), 2000);
  EXPECT_EQ(c.src[0], "Go.");
  EXPECT_EQ(c.tgt[0], "Va !");
  EXPECT_EQ(c.src[1999], "Tickets are valid for just two days, including the day they are purchased on.");
  const ParallelCorpus r = read_tsv(kSample, {.src_column = 1, .tgt_column = 0});
  EXPECT_EQ(r.src[0], "Va !");
  EXPECT_EQ(r.tgt[0], "Go.");

  DataDir dir;
  write_lines(dir.file("t.tsv.gz"), {"a\tb\tattribution", "only one field"}, true);
  const std::string msg = message_of<std::invalid_argument>([&] { read_tsv(dir.file("t.tsv.gz")); });
  EXPECT_TRUE(contains(msg, dir.file("t.tsv.gz") + ":2: expected at least 2 tab-separated fields, found 1")) << msg;
  EXPECT_THROW(read_tsv(kSample, {.src_column = 0, .tgt_column = 0}), std::invalid_argument);
}

// ---------------------------------------------------------------- vocabularies

TEST(SubwordVocab, JointUnigramRoundTripAndSpecialIds) {
  DataDir dir;
  const ParallelCorpus c = read_tsv(kSample);
  VocabTrainOptions o;
  o.vocab_size = 1000;
  o.normalization = "identity";  // exact round trip, NBSP included
  const std::string model = dir.file("joint.model");
  SubwordVocab::train({&c.src, &c.tgt}, model, o);
  const SubwordVocab v = SubwordVocab::load(model);
  EXPECT_EQ(v.size(), 1000);
  EXPECT_EQ(v.specials(), kTrainedSpecials);
  EXPECT_EQ(v.piece(kTrainedSpecials.pad), "<pad>");
  EXPECT_EQ(v.piece(kTrainedSpecials.bos), "<s>");
  EXPECT_EQ(v.piece(kTrainedSpecials.eos), "</s>");
  EXPECT_EQ(v.piece(kTrainedSpecials.unk), "<unk>");
  EXPECT_EQ(v.id("<s>"), kTrainedSpecials.bos);
  EXPECT_EQ(v.id("no-such-piece-here"), kTrainedSpecials.unk);

  int64_t pieces = 0, chars = 0;
  for (const auto* side : {&c.src, &c.tgt})
    for (const std::string& s : *side) {
      const std::vector<int> ids = v.encode(s);
      for (int id : ids) {
        ASSERT_GT(id, kTrainedSpecials.unk) << "special or unknown id in '" << s << "'";
        ASSERT_LT(id, v.size());
      }
      ASSERT_EQ(v.decode(ids), s);
      pieces += int64_t(ids.size());
      chars += int64_t(decode_utf8(s).size());
    }
  // subwords, not characters: clearly fewer pieces than characters
  EXPECT_LT(pieces * 2, chars);
  // BOS/EOS/pad decode to nothing
  std::vector<int> framed = {kTrainedSpecials.bos};
  for (int id : v.encode("Go.")) framed.push_back(id);
  framed.push_back(kTrainedSpecials.eos);
  framed.push_back(kTrainedSpecials.pad);
  EXPECT_EQ(v.decode(framed), "Go.");
  EXPECT_THROW(v.decode({v.size()}), std::invalid_argument);
  EXPECT_THROW(v.piece(-1), std::invalid_argument);
}

TEST(SubwordVocab, SeparateBpeVocabsAndNfkc) {
  DataDir dir;
  const ParallelCorpus c = read_tsv(kSample);
  VocabTrainOptions o;
  o.vocab_size = 600;
  o.model = SubwordModel::kBpe;  // default nmt_nfkc normalisation
  SubwordVocab::train({&c.src}, dir.file("en.model"), o);
  SubwordVocab::train({&c.tgt}, dir.file("fr.model"), o);
  const SubwordVocab en = SubwordVocab::load(dir.file("en.model"));
  const SubwordVocab fr = SubwordVocab::load(dir.file("fr.model"));
  EXPECT_EQ(en.size(), 600);
  EXPECT_EQ(fr.size(), 600);
  EXPECT_NE(en.id("▁the"), kTrainedSpecials.unk);  // a frequent English piece is in the English model
  // NFKC maps the no-break spaces of French typography (U+00A0, U+202F) to
  // spaces and leaves the rest of this sample alone; decoding is stable.
  for (const std::string& s : c.tgt) {
    const std::string once = fr.decode(fr.encode(s));
    ASSERT_EQ(fr.decode(fr.encode(once)), once) << s;
    const bool has_nbsp = contains(s, "\u00A0") || contains(s, "\u202F");
    EXPECT_EQ(once == s, !has_nbsp) << s;
  }
}

TEST(SubwordVocab, DeterministicTrainingAndThreadIndependentEncoding) {
  DataDir dir;
  const ParallelCorpus c = read_tsv(kSample);
  VocabTrainOptions o;
  o.vocab_size = 500;
  SubwordVocab::train({&c.src}, dir.file("a.model"), o);
  SubwordVocab::train({&c.src}, dir.file("b.model"), o);
  EXPECT_EQ(read_raw(dir.file("a.model")), read_raw(dir.file("b.model")));
  const SubwordVocab v = SubwordVocab::load(dir.file("a.model"));
  const int saved = num_threads();
  set_num_threads(1);
  const auto one = v.encode_all(c.src);
  set_num_threads(2);
  const auto two = v.encode_all(c.src);
  set_num_threads(saved);
  EXPECT_EQ(one, two);
  for (size_t i = 0; i < c.src.size(); i += 97) EXPECT_EQ(one[i], v.encode(c.src[i]));
}

TEST(SubwordVocab, Errors) {
  DataDir dir;
  const std::string junk = dir.file("junk.model");
  write_raw(junk, "this is not a model");
  EXPECT_TRUE(contains(message_of<std::runtime_error>([&] { SubwordVocab::load(junk); }), junk));
  const std::vector<std::string> tiny = {"a b", "b a"};
  VocabTrainOptions o;
  o.vocab_size = 5000;  // far more pieces than two sentences can give
  EXPECT_THROW(SubwordVocab::train({&tiny}, dir.file("t.model"), o), std::runtime_error);
  o.vocab_size = 3;
  EXPECT_THROW(SubwordVocab::train({&tiny}, dir.file("t.model"), o), std::invalid_argument);
  const std::vector<std::string> none;
  EXPECT_THROW(SubwordVocab::train({&none}, dir.file("t.model"), {}), std::invalid_argument);
}

// ---------------------------------------------------------------- filtering

namespace {
// Pairs of the given (source, target) lengths, lines 1, 2, ...
EncodedCorpus corpus_of_lengths(const std::vector<std::pair<int, int>>& lengths) {
  EncodedCorpus c;
  for (const auto& [s, t] : lengths) {
    c.src.push_back(std::vector<int>(size_t(s), 7));
    c.tgt.push_back(std::vector<int>(size_t(t), 8));
    c.line.push_back(int64_t(c.line.size()) + 1);
  }
  return c;
}
}  // namespace

TEST(LengthFilter, CountsEachRule) {
  const EncodedCorpus c = corpus_of_lengths({
      {3, 4},   // kept
      {0, 2},   // empty
      {11, 5},  // too long (src)
      {2, 11},  // too long (tgt) -- also a bad ratio, counted once
      {1, 4},   // ratio 4 > 3
      {2, 6},   // ratio 3: kept
  });
  LengthFilter f;
  f.max_src_tokens = 10;
  f.max_tgt_tokens = 10;
  f.max_ratio = 3;
  FilterReport r;
  const EncodedCorpus kept = filter_by_length(c, f, &r);
  EXPECT_EQ(r.kept, 2);
  EXPECT_EQ(r.empty, 1);
  EXPECT_EQ(r.too_long, 2);
  EXPECT_EQ(r.bad_ratio, 1);
  EXPECT_EQ(kept.line, (std::vector<int64_t>{1, 6}));
  f.max_ratio = 0;  // ratio rule off
  EXPECT_EQ(filter_by_length(c, f).size(), 3);
}

// Every bound from both sides: a pair exactly at a limit is kept, one token (or
// one step of ratio) past it dropped; one token is not empty; limits of 1 are
// valid, 0 is not.
TEST(LengthFilter, BoundsAreExactOnBothSides) {
  const EncodedCorpus c = corpus_of_lengths({
      {10, 10},  // 1: both at the limit: kept
      {11, 10},  // 2: source one over: too long
      {10, 11},  // 3: target one over: too long
      {1, 1},    // 4: one token each: kept
      {4, 12},   // 5: target over, ratio exactly 3: too long
      {3, 9},    // 6: ratio exactly 3: kept
      {9, 3},    // 7: ratio exactly 3 the other way: kept
      {3, 10},   // 8: ratio 3.33: bad ratio
      {10, 3},   // 9: ratio 3.33 the other way: bad ratio
      {0, 1},    // 10: empty source
      {1, 0},    // 11: empty target
  });
  LengthFilter f;
  f.max_src_tokens = 10;
  f.max_tgt_tokens = 10;
  f.max_ratio = 3;
  FilterReport r;
  EXPECT_EQ(filter_by_length(c, f, &r).line, (std::vector<int64_t>{1, 4, 6, 7}));
  EXPECT_EQ(r.too_long, 3);
  EXPECT_EQ(r.bad_ratio, 2);
  EXPECT_EQ(r.empty, 2);
  f.max_src_tokens = f.max_tgt_tokens = 1;  // the smallest limit: only pair 4
  EXPECT_EQ(filter_by_length(c, f).line, (std::vector<int64_t>{4}));
  f.max_src_tokens = 0;
  EXPECT_THROW(filter_by_length(c, f), std::invalid_argument);
  f.max_src_tokens = 1;
  f.max_tgt_tokens = 0;
  EXPECT_THROW(filter_by_length(c, f), std::invalid_argument);
}

// ---------------------------------------------------------------- batching

namespace {

// The sample encoded with a small joint vocabulary, filtered.
const EncodedCorpus& sample_corpus() {
  static const EncodedCorpus corpus = [] {
    const std::string model = (fs::temp_directory_path() / ("attn_test_batch_" + std::to_string(::getpid()) + ".model")).string();
    const ParallelCorpus c = read_tsv(kSample);
    VocabTrainOptions o;
    o.vocab_size = 800;
    SubwordVocab::train({&c.src, &c.tgt}, model, o);
    const SubwordVocab v = SubwordVocab::load(model);
    fs::remove(model);
    return filter_by_length(encode_corpus(c, v, v), LengthFilter{});
  }();
  return corpus;
}

}  // namespace

TEST(Batcher, EveryPairOncePerEpochWithinBudget) {
  const EncodedCorpus& c = sample_corpus();
  ASSERT_GT(c.size(), 1900);
  BatchOptions o;
  o.max_tokens = 600;
  const Batcher b(c, o);
  for (uint64_t epoch : {0, 1}) {
    const auto plan = b.plan_epoch(epoch);
    std::vector<int> seen(size_t(c.size()), 0);
    for (const auto& batch : plan) {
      ASSERT_FALSE(batch.empty());
      int64_t widest = 0;
      for (int64_t i : batch) {
        ++seen[size_t(i)];
        widest = std::max(widest, b.cost(i));
      }
      EXPECT_LE(int64_t(batch.size()) * widest, o.max_tokens);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; })) << "epoch " << epoch;
  }
}

TEST(Batcher, ShuffleIsSeededAndThreadIndependent) {
  const EncodedCorpus& c = sample_corpus();
  BatchOptions o;
  o.max_tokens = 500;
  const Batcher b(c, o);
  const int saved = num_threads();
  set_num_threads(1);
  const auto p1 = b.plan_epoch(3);
  set_num_threads(2);
  const auto p2 = b.plan_epoch(3);
  set_num_threads(saved);
  EXPECT_EQ(p1, p2);
  EXPECT_NE(b.plan_epoch(3), b.plan_epoch(4));  // epochs differ
  BatchOptions other = o;
  other.seed = 2;
  EXPECT_NE(Batcher(c, other).plan_epoch(3), p1);  // seeds differ
  EXPECT_EQ(Batcher(c, o).plan_epoch(3), p1);       // a new batcher with the same seed agrees
}

TEST(Batcher, SortingWindowsReducePadding) {
  const EncodedCorpus& c = sample_corpus();
  auto padding_share = [&](int64_t window) {
    BatchOptions o;
    o.max_tokens = 500;
    o.sort_window = window;
    const Batcher b(c, o);
    int64_t padded = 0, real = 0;
    for (const auto& batch : b.plan_epoch(0)) {
      int64_t widest = 0;
      for (int64_t i : batch) {
        widest = std::max(widest, b.cost(i));
        real += b.cost(i);
      }
      padded += widest * int64_t(batch.size());
    }
    return 1.0 - double(real) / double(padded);
  };
  const double unsorted = padding_share(1), sorted = padding_share(1 << 16);
  EXPECT_LT(sorted, 0.10);
  EXPECT_GT(unsorted, 3 * sorted);
}

// group_sources: the pairs sharing a source (consecutive, as a captioning
// corpus lists an image's captions) land in one batch, every pair once, within
// the budget; without it the plan is the pair-wise one.
TEST(Batcher, GroupedSourcesStayInOneBatch) {
  EncodedCorpus c;
  Rng rng(4);
  for (int image = 0; image < 300; ++image) {
    const int captions = 1 + int(rng.below(5));
    for (int k = 0; k < captions; ++k) {
      c.src.push_back({image});
      c.tgt.push_back(std::vector<int>(size_t(3 + rng.below(12)), 5));
      c.line.push_back(int64_t(c.size()) + 1);
    }
  }
  BatchOptions o;
  o.max_tokens = 200;
  o.group_sources = true;
  const Batcher b(c, o);
  for (uint64_t epoch : {0, 1}) {
    std::vector<int> seen(size_t(c.size()), 0), batch_of_image(300, -1);
    const auto plan = b.plan_epoch(epoch);
    for (size_t k = 0; k < plan.size(); ++k) {
      int64_t widest = 0;
      for (int64_t i : plan[k]) {
        ++seen[size_t(i)];
        widest = std::max(widest, b.cost(i));
        int& home = batch_of_image[size_t(c.src[size_t(i)][0])];
        if (home < 0) home = int(k);
        EXPECT_EQ(home, int(k)) << "image " << c.src[size_t(i)][0] << " split across batches";
      }
      EXPECT_LE(int64_t(plan[k].size()) * widest, o.max_tokens);
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; })) << "epoch " << epoch;
  }
  o.max_tokens = 30;  // an image of 3+ long captions cannot fit: named by its first line
  EXPECT_THROW(Batcher(c, o), std::invalid_argument);
  BatchOptions pairwise = o;
  pairwise.max_tokens = 200;
  pairwise.group_sources = false;
  EXPECT_GT(Batcher(c, pairwise).plan_epoch(0).size(), 0u);
}

TEST(Batcher, PaddedTensorsMatchThePairs) {
  const EncodedCorpus& c = sample_corpus();
  BatchOptions o;
  o.max_tokens = 400;
  o.max_sentences = 24;
  const Batcher b(c, o);
  const auto plan = b.plan_epoch(0);
  for (size_t k = 0; k < plan.size(); k += 7) {
    const auto& idx = plan[k];
    ASSERT_LE(int64_t(idx.size()), o.max_sentences);
    const Seq2SeqBatch batch = b.make_batch(idx);
    const int64_t B = int64_t(idx.size());
    int64_t S = 0, T = 0;
    for (int64_t i : idx) {
      S = std::max<int64_t>(S, int64_t(c.src[i].size()));
      T = std::max<int64_t>(T, int64_t(c.tgt[i].size()));
    }
    ASSERT_EQ(batch.src.shape(), (Shape{B, S}));
    ASSERT_EQ(batch.tgt_in.shape(), (Shape{B, T + 1}));
    ASSERT_EQ(batch.tgt_out.shape(), (Shape{B, T + 1}));
    ASSERT_EQ(int64_t(batch.src_lengths.size()), B);
    ASSERT_EQ(int64_t(batch.targets.size()), B);
    for (int64_t r = 0; r < B; ++r) {
      const auto& s = c.src[idx[r]];
      const auto& t = c.tgt[idx[r]];
      const int64_t n = int64_t(t.size());
      EXPECT_EQ(batch.src_lengths[r], int64_t(s.size()));
      EXPECT_EQ(batch.targets[r], t);
      for (int64_t j = 0; j < S; ++j)
        EXPECT_EQ(batch.src.data()[r * S + j], j < int64_t(s.size()) ? float(s[j]) : float(SpecialIds{}.pad));
      EXPECT_EQ(batch.tgt_in.data()[r * (T + 1)], float(SpecialIds{}.bos));
      for (int64_t j = 0; j <= T; ++j) {
        const float in = batch.tgt_in.data()[r * (T + 1) + j];
        const float out = batch.tgt_out.data()[r * (T + 1) + j];
        if (j >= 1 && j <= n) EXPECT_EQ(in, float(t[j - 1]));
        if (j > n) EXPECT_EQ(in, float(SpecialIds{}.pad));
        EXPECT_EQ(out, j < n ? float(t[j]) : j == n ? float(SpecialIds{}.eos) : float(SpecialIds{}.pad));
      }
    }
  }
}

TEST(Batcher, NoShuffleKeepsCorpusOrder) {
  const EncodedCorpus& c = sample_corpus();
  BatchOptions o;
  o.shuffle = false;
  o.sort_window = 1;  // no sorting either: consecutive pairs
  o.max_tokens = 300;
  std::vector<int64_t> flat;
  for (const auto& batch : Batcher(c, o).plan_epoch(5))
    flat.insert(flat.end(), batch.begin(), batch.end());
  std::vector<int64_t> expected(size_t(c.size()));
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = int64_t(i);
  EXPECT_EQ(flat, expected);
}

TEST(Batcher, RejectsPairsThatCannotFit) {
  EncodedCorpus c;
  c.src = {{5, 6}, std::vector<int>(40, 5)};
  c.tgt = {{7}, {8}};
  c.line = {10, 11};
  BatchOptions o;
  o.max_tokens = 32;
  const std::string msg = message_of<std::invalid_argument>([&] { Batcher(c, o); });
  EXPECT_TRUE(contains(msg, "corpus line 11 needs 40 padded tokens")) << msg;
  c.src[1] = {};
  EXPECT_TRUE(contains(message_of<std::invalid_argument>([&] { Batcher(c, o); }), "line 11 has an empty source"));
  c.src[1] = {9};
  const Batcher ok(c, o);
  EXPECT_THROW(ok.make_batch({}), std::invalid_argument);
  EXPECT_THROW(ok.make_batch({2}), std::invalid_argument);
}
