// Held-out splits by source sentence (data/split.h): every translation of a
// source sentence lands on one side, the held-out counts are counts of
// distinct sentences, and the split is a function of the seed alone.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "attn/data/split.h"

using namespace attn::data;

namespace {

// 60 source sentences, most with several translations, some written twice
// with other capitalisation or spacing (as Tatoeba does).
ParallelCorpus corpus_with_repeats() {
  ParallelCorpus c;
  for (int s = 0; s < 60; ++s) {
    const std::string src = "Sentence number " + std::to_string(s) + ".";
    for (int k = 0; k <= s % 3; ++k) {
      c.src.push_back(src);
      c.tgt.push_back("Phrase " + std::to_string(s) + " traduction " + std::to_string(k) + ".");
    }
    if (s % 7 == 0) {  // the same sentence again, other case and spacing
      c.src.push_back("  sentence  Number " + std::to_string(s) + ". ");
      c.tgt.push_back("Phrase " + std::to_string(s) + " encore.");
    }
  }
  return c;
}

// split_key -> which split (0 train, 1 valid, 2 test); fails the test on a leak.
std::map<std::string, int> sides(const CorpusSplit& s) {
  std::map<std::string, int> side;
  const ParallelCorpus* parts[] = {&s.train, &s.valid, &s.test};
  for (int p = 0; p < 3; ++p)
    for (const auto& src : parts[p]->src) {
      auto [it, inserted] = side.emplace(split_key(src), p);
      EXPECT_EQ(it->second, p) << "\"" << src << "\" is in split " << it->second << " and split " << p;
    }
  return side;
}

std::set<std::string> keys_of(const ParallelCorpus& c) {
  std::set<std::string> k;
  for (const auto& s : c.src) k.insert(split_key(s));
  return k;
}

}  // namespace

TEST(Split, KeyIgnoresAsciiCaseAndSpacing) {
  EXPECT_EQ(split_key("  France is in  Western\tEurope. "), "france is in western europe.");
  EXPECT_EQ(split_key("France is in western Europe."), split_key("France is in Western Europe."));
  EXPECT_NE(split_key("Go."), split_key("Go!"));
  EXPECT_EQ(split_key("Ça va ?"), "Ça va ?");  // non-ASCII bytes are kept as they are
}

TEST(Split, EverySourceSentenceOnOneSide) {
  const ParallelCorpus c = corpus_with_repeats();
  const CorpusSplit s = split_by_source(c, 8, 5, 42);
  EXPECT_EQ(s.train.size() + s.valid.size() + s.test.size(), c.size());
  const auto side = sides(s);
  EXPECT_EQ(side.size(), 60u);
  EXPECT_EQ(keys_of(s.valid).size(), 8u);  // counts are of distinct sentences, not pairs
  EXPECT_EQ(keys_of(s.test).size(), 5u);
  EXPECT_GT(s.valid.size(), 8);  // ... so a held-out sentence takes all its translations along
  std::set<std::pair<std::string, std::string>> pairs;  // pairs stay pairs
  for (int64_t i = 0; i < c.size(); ++i) pairs.emplace(c.src[size_t(i)], c.tgt[size_t(i)]);
  for (const auto* part : {&s.train, &s.valid, &s.test}) {
    ASSERT_EQ(part->src.size(), part->tgt.size());
    for (size_t i = 0; i < part->src.size(); ++i) EXPECT_TRUE(pairs.count({part->src[i], part->tgt[i]})) << part->src[i];
  }
}

TEST(Split, SeedDecidesTheSplit) {
  const ParallelCorpus c = corpus_with_repeats();
  const CorpusSplit a = split_by_source(c, 8, 5, 7), b = split_by_source(c, 8, 5, 7), d = split_by_source(c, 8, 5, 8);
  EXPECT_EQ(a.valid.src, b.valid.src);
  EXPECT_EQ(a.test.tgt, b.test.tgt);
  EXPECT_EQ(a.train.src, b.train.src);
  EXPECT_NE(keys_of(a.test), keys_of(d.test));
}

TEST(Split, TooManyHeldOutNamesTheCounts) {
  const ParallelCorpus c = corpus_with_repeats();
  try {
    split_by_source(c, 40, 20, 1);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("40 valid + 20 test source sentences held out of only 60"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(split_by_source(c, 40, 19, 1));
}
