// Casual-source augmentation (data/augment.h): the casual form of a sentence,
// and copies that keep every original pair, change only the source, follow
// the seed alone and respect the share.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "attn/data/augment.h"

using namespace attn::data;

TEST(Augment, CasualFormLowerCasesAndDropsFinalPunctuation) {
  EXPECT_EQ(casual_form("He doesn't like apples."), "he doesn't like apples");
  EXPECT_EQ(casual_form("Are you OK?! "), "are you ok");
  EXPECT_EQ(casual_form("Tom said: \"Go.\""), "tom said: \"go.\"");  // only trailing . ! ? and spaces
  EXPECT_EQ(casual_form("Émile a 3 ans."), "Émile a 3 ans");          // non-ASCII letters unchanged
  EXPECT_EQ(casual_form("..."), "");
}

TEST(Augment, CopiesAShareWithCasualSourcesAndKeepsTheOriginals) {
  ParallelCorpus c;
  for (int i = 0; i < 200; ++i) {
    c.src.push_back("Sentence " + std::to_string(i) + (i % 10 == 0 ? "" : "."));  // every 10th is already casual...
    if (i % 10 == 0) c.src.back() = "sentence " + std::to_string(i);             // ...in lower case, no stop
    c.tgt.push_back("Phrase " + std::to_string(i) + ".");
  }
  const ParallelCorpus original = c;
  const int64_t added = add_casual_sources(c, 0.25, 5);
  ASSERT_EQ(c.size(), original.size() + added);
  EXPECT_LE(added, 50);  // floor(0.25 * 200) picked, casual ones not copied
  EXPECT_GE(added, 35);
  for (int64_t i = 0; i < original.size(); ++i) {  // originals untouched, in order
    EXPECT_EQ(c.src[size_t(i)], original.src[size_t(i)]);
    EXPECT_EQ(c.tgt[size_t(i)], original.tgt[size_t(i)]);
  }
  std::set<std::string> copied;
  for (int64_t i = original.size(); i < c.size(); ++i) {
    const std::string& s = c.src[size_t(i)];
    EXPECT_EQ(s, casual_form(s));
    EXPECT_EQ(s.substr(0, 9), "sentence ");
    const std::string number = s.substr(9);
    EXPECT_EQ(c.tgt[size_t(i)], "Phrase " + number + ".");  // the target of the pair it copies
    EXPECT_NE(std::stoi(number) % 10, 0);                   // already-casual sources are not copied
    EXPECT_TRUE(copied.insert(s).second) << "copied twice: " << s;
  }

  ParallelCorpus again = original, other = original;
  EXPECT_EQ(add_casual_sources(again, 0.25, 5), added);
  EXPECT_EQ(again.src, c.src);  // a function of the seed
  add_casual_sources(other, 0.25, 6);
  EXPECT_NE(other.src, c.src);

  ParallelCorpus none = original;
  EXPECT_EQ(add_casual_sources(none, 0.0, 5), 0);
  EXPECT_THROW(add_casual_sources(none, 1.5, 5), std::invalid_argument);
  EXPECT_THROW(add_casual_sources(none, -0.1, 5), std::invalid_argument);
}
