// BLEU, chrF and the 13a tokenizer against sacreBLEU's own published numbers.
//
// sacreBLEU cannot be installed here, so the expected values are not computed
// by us: they are the hard-coded expectations of sacreBLEU's test suite and
// README, which sacreBLEU's CI checks against its own implementation. Read from
// the mjpost/sacrebleu repository (stored copies, via the search tool):
//   [README]   README.md                   commit 078c440168c6adc89ba75fe6d63f0d922d42bcfe
//   [T-BLEU]   test/test_bleu.py           commit 785d26bb42ff5cc738c8aa06efb288cf407fc4fd
//   [T-SENT]   test/test_sentence_bleu.py  commit 27bec349d41c900990d5aa669056766d0543d710
//   [T-CHRF]   test/test_chrf.py           commit 27bec349d41c900990d5aa669056766d0543d710
// sacreBLEU's compat wrappers used by those tests, spelled out as our options:
//   raw_corpus_bleu(h, r, v)  = tokenize none, smooth floor (v, default 0.1), effective order on
//   corpus_bleu / BLEU()      = the defaults (13a, exp, order 4, effective order off)
//   sentence_bleu (compat)    = effective order on
//   corpus_chrf(remove_whitespace=False) = ChrfOptions::whitespace = true
// The 13a tokenizer cases at the end were written by hand from the rules in
// tokenizer_13a.py / tokenizer_re.py and their outputs checked once with
// Python 3.11's `re` running those four patterns (the engine sacreBLEU uses).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/eval/bleu.h"
#include "attn/eval/chrf.h"
#include "attn/eval/tokenizer_13a.h"

using namespace attn::eval;

namespace {

using Lines = std::vector<std::string>;
using Streams = std::vector<std::vector<std::string>>;

// sacreBLEU README / test_bleu.py example: 3 segments, 2 reference streams.
const Lines kHyps = {"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."};
const Streams kRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
};

BleuOptions raw_options(double floor_value) {  // sacreBLEU's raw_corpus_bleu
  BleuOptions o;
  o.tokenize = BleuTokenizer::kNone;
  o.smooth = BleuSmooth::kFloor;
  o.smooth_value = floor_value;
  o.effective_order = true;
  return o;
}

}  // namespace

// ---------------------------------------------------------------- BLEU

TEST(Bleu, ReadmeCorpusExampleSignatureLine) {  // [README], [T-BLEU] 48.530827
  const BleuScore s = corpus_bleu(kHyps, kRefs);
  EXPECT_NEAR(s.score, 48.530827, 1e-6);
  EXPECT_EQ(s.format(), "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  EXPECT_EQ(s.num_refs, 2);
  EXPECT_EQ(bleu_signature({}, s.num_refs), "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp");
}

TEST(Bleu, ReadmeVariableNumberOfReferences) {  // [README] "Variable Number of References"
  Streams refs = kRefs;
  refs[0][0] = "";  // the first segment has only the second stream's reference
  const BleuScore s = corpus_bleu(kHyps, refs);
  EXPECT_EQ(s.format(), "BLEU = 29.44 82.4/42.9/27.3/12.5 (BP = 0.889 ratio = 0.895 hyp_len = 17 ref_len = 19)");
  EXPECT_EQ(s.num_refs, -1);
  EXPECT_EQ(bleu_signature({}, s.num_refs), "nrefs:var|case:mixed|eff:no|tok:13a|smooth:exp");
}

TEST(Bleu, CorpusCasesFromSacrebleuTests) {  // [T-BLEU] test_corpus_bleu_cases
  BleuOptions none_tok;
  none_tok.tokenize = BleuTokenizer::kNone;
  BleuOptions no_smooth;
  no_smooth.smooth = BleuSmooth::kNone;
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs, none_tok).score, 49.1919566, 1e-6);
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs, no_smooth).score, 48.530827, 1e-6);
  // empty hypotheses are kept (and score 0)
  const BleuScore empty = corpus_bleu({"", "", ""}, kRefs);
  EXPECT_EQ(empty.score, 0.0);
  EXPECT_EQ(empty.sys_len, 0);
  EXPECT_EQ(empty.ref_len, 17);  // the shortest reference of each segment: 6 + 5 + 6
  EXPECT_EQ(empty.bp, 0.0);
}

TEST(Bleu, MaxNgramOrder) {  // [T-BLEU] test_bleu_max_order, compared as "%.2f"
  const char* expected[] = {"77.65", "60.50", "53.93", "48.53", "46.14", "43.28"};
  for (int order = 1; order <= 6; ++order) {
    BleuOptions o;
    o.max_ngram_order = order;
    const BleuScore s = corpus_bleu(kHyps, kRefs, o);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", s.score);
    EXPECT_EQ(std::string(buf), expected[order - 1]) << "order " << order;
    EXPECT_EQ(int(s.precisions.size()), order);
  }
}

TEST(Bleu, RawCorpusBleuCases) {  // [T-BLEU] test_raw_bleu_cases, test_case_effective_order
  struct Case {
    Lines hyps;
    Lines ref;
    double expected;  // BLEU / 100
  } cases[] = {
      {{"this is a test", "another test"}, {"ref1", "ref2"}, 0.0},
      {{"this is a test"}, {"this is a test"}, 1.0},
      {{"this is a fest"}, {"this is a test"}, 0.223606797749979},
      {{"test"}, {"a test"}, 0.3678794411714425},
      {{"a test"}, {"a test"}, 1.0},
      {{"a little test"}, {"a test"}, 0.03218297948685433},
  };
  for (const Case& c : cases)
    EXPECT_NEAR(corpus_bleu(c.hyps, {c.ref}, raw_options(0.01)).score / 100, c.expected, 1e-8) << c.hyps[0];
}

TEST(Bleu, StatisticsAndFloorOffset) {  // [T-BLEU] test_case_statistics, test_case_offset
  const Lines hyp = {"am I am a character sequence"};
  const Streams ref = {{"I am a symbol string sequence a a"}};
  const BleuScore s = corpus_bleu(hyp, ref, raw_options(0.01));
  EXPECT_EQ(s.counts, (std::vector<double>{4, 2, 1, 0}));
  EXPECT_EQ(s.totals, (std::vector<double>{6, 5, 4, 3}));
  EXPECT_NEAR(corpus_bleu(hyp, ref, raw_options(0.0)).score / 100, 0.0, 1e-8);
  EXPECT_NEAR(corpus_bleu(hyp, ref, raw_options(-1)).score / 100, 0.1555722182, 1e-8);  // default floor 0.1
}

TEST(Bleu, ComputeFromStatistics) {  // [T-BLEU] test_case_scoring, test_case_degenerate_stats
  BleuOptions none;
  none.smooth = BleuSmooth::kNone;
  EXPECT_NEAR(compute_bleu({11, 11, {9, 7, 5, 3}, {10, 8, 6, 4}}, none).score / 100, 0.8375922397, 1e-8);

  struct Degenerate {
    BleuStats stats;
    double floor;
  } cases[] = {
      {{0, 1, {0, 0, 0, 0}, {4, 4, 2, 1}}, 0.0},  {{14, 10, {0, 0, 0, 0}, {10, 11, 12, 0}}, 0.0},
      {{0, 0, {0, 0, 0, 0}, {0, 0, 0, 0}}, 0.0},  {{6, 6, {6, 5, 4, 0}, {6, 5, 4, 3}}, 0.0},
      {{0, 0, {0, 0, 0, 0}, {0, 0, 0, 0}}, 0.1},  {{1, 5, {0, 0, 0, 0}, {0, 0, 0, 0}}, 0.01},
  };
  for (const Degenerate& d : cases) {
    BleuOptions o;
    o.smooth = BleuSmooth::kFloor;
    o.smooth_value = d.floor;
    EXPECT_EQ(compute_bleu(d.stats, o).score, 0.0);
  }
}

TEST(Bleu, SentenceBleuSmoothingAndTokenizers) {  // [T-SENT] test_cases (issue #98 example)
  const std::string ref = "producţia de zahăr brut se exprimă în zahăr alb;";
  const std::string sys = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;";
  struct Case {
    BleuSmooth smooth;
    double value;  // < 0: default
    BleuTokenizer tok;
    double expected;
  } cases[] = {
      {BleuSmooth::kExp, -1, BleuTokenizer::k13a, 8.493},   {BleuSmooth::kNone, -1, BleuTokenizer::k13a, 0.0},
      {BleuSmooth::kFloor, -1, BleuTokenizer::k13a, 4.51688}, {BleuSmooth::kFloor, 0.1, BleuTokenizer::k13a, 4.51688},
      {BleuSmooth::kFloor, 0.5, BleuTokenizer::k13a, 10.10},  {BleuSmooth::kAddK, -1, BleuTokenizer::k13a, 14.882},
      {BleuSmooth::kAddK, 1, BleuTokenizer::k13a, 14.882},    {BleuSmooth::kAddK, 2, BleuTokenizer::k13a, 21.389},
      {BleuSmooth::kExp, -1, BleuTokenizer::kNone, 7.347},
  };
  for (const Case& c : cases) {
    BleuOptions o;
    o.smooth = c.smooth;
    o.smooth_value = c.value;
    o.tokenize = c.tok;
    o.effective_order = true;
    EXPECT_NEAR(sentence_bleu(sys, {ref}, o).score, c.expected, 1e-3)
        << bleu_signature(o, 1);
  }
}

TEST(Bleu, SentenceWithNoMatchIsZeroForEverySmoothing) {  // [T-SENT] test_cases_zero_bleu (issue #141)
  for (BleuSmooth sm : {BleuSmooth::kExp, BleuSmooth::kNone, BleuSmooth::kFloor, BleuSmooth::kAddK}) {
    BleuOptions o;
    o.smooth = sm;
    o.effective_order = true;
    const BleuScore s = sentence_bleu("this is a cat", {"okay thanks"}, o);
    EXPECT_EQ(s.score, 0.0);
    EXPECT_EQ(s.format(), "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 2.000 hyp_len = 4 ref_len = 2)");
  }
}

// Edge cases: no published number needed, the value follows from the definition.
TEST(Bleu, EdgeCases) {
  // identical corpora score exactly 100 whatever the tokenization
  EXPECT_DOUBLE_EQ(corpus_bleu(kHyps, {kHyps}).score, 100.0);
  // a multi-reference segment takes the best clip per n-gram and the closest length
  const BleuScore two = corpus_bleu({"a b c d"}, {{"a b x x x x x x"}, {"y b c d"}});
  EXPECT_EQ(two.counts, (std::vector<double>{4, 3, 1, 0}));  // ab, bc, cd; bcd
  EXPECT_EQ(two.ref_len, 4);  // |4-8| vs |4-4|
  // closest reference length: ties go to the shorter reference
  EXPECT_EQ(corpus_bleu({"a b c"}, {{"a b"}, {"a b c d"}}).ref_len, 2);
  // an empty corpus has no n-grams: score 0, not NaN
  const BleuScore none = corpus_bleu({}, {{}});
  EXPECT_EQ(none.score, 0.0);
  EXPECT_FALSE(std::isnan(none.score));
  // hypothesis longer than the reference: BP = 1, ratio > 1
  const BleuScore longer = corpus_bleu({"a b c d e"}, {{"a b c d"}});
  EXPECT_EQ(longer.bp, 1.0);
  EXPECT_DOUBLE_EQ(longer.ratio, 1.25);
}

// Clipping against several references: a hypothesis n-gram counts at most as
// often as it occurs in the one reference where it occurs most (sacreBLEU's
// extract_reference_ngrams: max over references, not the sum, the first, the
// last or the least), and the reference length is the closest to the
// hypothesis, the shorter one on ties. Three reference streams, two segments;
// counts by hand:
//   segment 1: "the the the the cat sat", refs with "the" 2, 3 (the middle one), 0 times
//     1-grams the 4 -> 3, cat 1, sat 1                      5 / 6
//     2-grams "the the" 3 -> 2 (ref 2), "the cat", "cat sat" 4 / 5
//     3-grams "the the the" 2 -> 1, "the the cat", "the cat sat" 3 / 4
//     4-grams "the the the cat" (ref 2)                     1 / 3
//     lengths 6, 4, 3 -> 6
//   segment 2: "a b a b", refs "a b c", "b a b a c", "a c"
//     1-grams a 2, b 2 (both from ref 2)                     4 / 4
//     2-grams "a b" 2 -> 1, "b a" 1                          2 / 3
//     3-grams "a b a", "b a b" (ref 2)                       2 / 2
//     4-grams none                                           0 / 1
//     lengths 3, 5, 2 for 4: 3 and 5 tie -> 3
//   corpus: 9/10, 6/8, 5/6, 1/4, c = 10 >= r = 9 (BP 1):
//     BLEU = 100 (0.9 * 0.75 * 5/6 * 0.25)^(1/4) = 100 sqrt(0.375) = 61.2372435695794
// sacreBLEU 2.x's corpus_bleu (mjpost/sacrebleu f615c72, run from its source)
// gives 61.237243569579455 with these counts and lengths, for every order of the streams.
TEST(Bleu, ClipsByTheMaxCountOverSeveralReferences) {
  const Lines hyps = {"the the the the cat sat", "a b a b"};
  const Streams refs = {{"the cat sat on the mat", "a b c"}, {"the the the cat", "b a b a c"}, {"a cat sat", "a c"}};
  const BleuScore s = corpus_bleu(hyps, refs);
  EXPECT_EQ(s.counts, (std::vector<double>{9, 6, 5, 1}));
  EXPECT_EQ(s.totals, (std::vector<double>{10, 8, 6, 4}));
  EXPECT_EQ(s.sys_len, 10);
  EXPECT_EQ(s.ref_len, 9);
  EXPECT_EQ(s.bp, 1.0);
  EXPECT_NEAR(s.score, 100.0 * std::sqrt(0.375), 1e-9);
  EXPECT_NEAR(s.score, 61.237243569579455, 1e-9);  // sacreBLEU
  // the order of the reference streams does not matter
  for (const Streams& order : {Streams{refs[1], refs[2], refs[0]}, Streams{refs[2], refs[0], refs[1]},
                               Streams{refs[2], refs[1], refs[0]}}) {
    const BleuScore p = corpus_bleu(hyps, order);
    EXPECT_EQ(p.counts, s.counts);
    EXPECT_EQ(p.ref_len, s.ref_len);
    EXPECT_NEAR(p.score, s.score, 1e-12);
  }
}

TEST(Bleu, BadInputsThrowWithDetails) {
  try {
    corpus_bleu(kHyps, {{"one", "two"}});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 lines but there are 3 hypotheses"), std::string::npos) << e.what();
  }
  EXPECT_THROW(corpus_bleu({"a"}, {{""}}), std::invalid_argument);          // no reference at all
  EXPECT_THROW(corpus_bleu({"a\xff"}, {{"a"}}), std::invalid_argument);     // invalid UTF-8
  EXPECT_THROW(corpus_bleu({"a"}, {}), std::invalid_argument);              // no stream
  BleuOptions bad;
  bad.max_ngram_order = 0;
  EXPECT_THROW(corpus_bleu({"a"}, {{"a"}}, bad), std::invalid_argument);
}

// ---------------------------------------------------------------- chrF

TEST(Chrf, ReadmeMultiReference) {  // [README] chrF2 = 59.73
  const ChrfScore s = corpus_chrf(kHyps, kRefs);
  EXPECT_EQ(s.format(), "chrF2 = 59.73");
  EXPECT_EQ(chrf_signature({}, s.num_refs), "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no");
}

TEST(Chrf, EpsSmoothingBeta3) {  // [T-CHRF] test_cases: char 6, word 0, beta 3, eps_smoothing
  struct Case {
    Lines hyps, refs;
    double expected;
  } cases[] = {
      {{"abcdefg"}, {"hijklmnop"}, 0.0},
      {{"a"}, {"b"}, 0.0},
      {{""}, {"b"}, 0.0},
      {{""}, {"ref"}, 0.0},
      {{""}, {"reference"}, 0.0},
      {{"aa"}, {"ab"}, 8.3333},
      {{"a", "b"}, {"a", "c"}, 8.3333},
      {{"a"}, {"a"}, 16.6667},
      {{"a b c"}, {"a b c"}, 50.0},
      {{"a b c"}, {"abc"}, 50.0},
      {{" risk assessment must be made of those who are qualified and expertise in the sector - these are the "
        "scientists ."},
       {"risk assessment has to be undertaken by those who are qualified and expert in that area - that is the "
        "scientists ."},
       63.361730},
      {{" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "},
       {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
       64.1302698},
      {{"Niemand hat die Absicht, eine Mauer zu errichten"}, {"Niemand hat die Absicht, eine Mauer zu errichten"},
       100.0},
  };
  ChrfOptions o;
  o.beta = 3;
  o.eps_smoothing = true;
  for (const Case& c : cases) EXPECT_NEAR(corpus_chrf(c.hyps, {c.refs}, o).score, c.expected, 1e-4) << c.hyps[0];
}

TEST(Chrf, EffectiveOrderBeta3) {  // [T-CHRF] test_cases_effective_order
  struct Case {
    Lines hyps, refs;
    double expected;
  } cases[] = {
      {{"a"}, {"a"}, 100.0},         {{""}, {"reference"}, 0.0}, {{"a b c"}, {"a b c"}, 100.0},
      {{"a b c"}, {"abc"}, 100.0},   {{""}, {"c"}, 0.0},         {{"a", "b"}, {"a", "c"}, 50.0},
      {{"aa"}, {"ab"}, 25.0},
  };
  ChrfOptions o;
  o.beta = 3;
  for (const Case& c : cases) EXPECT_NEAR(corpus_chrf(c.hyps, {c.refs}, o).score, c.expected, 1e-4) << c.hyps[0];
}

TEST(Chrf, KeepWhitespaceBeta3) {  // [T-CHRF] test_cases_keep_whitespace
  ChrfOptions o;
  o.beta = 3;
  o.whitespace = true;
  EXPECT_NEAR(corpus_chrf({"Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."},
                          {{"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."}}, o)
                  .score,
              67.3481606, 1e-4);
  EXPECT_NEAR(corpus_chrf({"risk assessment must be made of those who are qualified and expertise in the sector - "
                           "these are the scientists ."},
                          {{"risk assessment has to be undertaken by those who are qualified and expert in that area - "
                            "that is the scientists ."}},
                          o)
                  .score,
              65.2414427, 1e-4);
}

TEST(Chrf, SentenceLevelCzech) {  // [T-CHRF] test_sentence_level_chrf: beta 2, eps_smoothing
  ChrfOptions o;
  o.eps_smoothing = true;
  EXPECT_NEAR(sentence_chrf("Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
                            {"Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře."}, o)
                  .score,
              39.14078509, 1e-4);
  EXPECT_NEAR(sentence_chrf("Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
                            {"A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři."}, o)
                  .score,
              31.22557079, 1e-4);
  EXPECT_NEAR(sentence_chrf("Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
                            {"Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli."},
                            o)
                  .score,
              57.15704367, 1e-4);
}

TEST(Chrf, EdgeCasesAndChrfPlusPlus) {
  // Characters are code points: "é" is one character, so "é" vs "é" is a perfect match
  EXPECT_DOUBLE_EQ(corpus_chrf({"é"}, {{"é"}}).score, 100.0);
  // Multi-reference takes the best reference per segment
  EXPECT_DOUBLE_EQ(corpus_chrf({"abc"}, {{"xyz"}, {"abc"}}).score, 100.0);
  // Empty hypothesis scores 0
  EXPECT_EQ(corpus_chrf({""}, {{"abc"}}).score, 0.0);
  // chrF++ (word order 2): identical text is 100, name has "++"
  ChrfOptions pp;
  pp.word_order = 2;
  const ChrfScore s = corpus_chrf({"Hello, world!"}, {{"Hello, world!"}}, pp);
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.format(), "chrF2++ = 100.00");
  EXPECT_EQ(int(s.stats.size()), 3 * 8);
  // word 1-grams of "Hello, world!" after punctuation splitting: Hello , world !
  EXPECT_EQ(s.stats[3 * 6 + 0], 4);
  EXPECT_THROW(corpus_chrf({"a"}, {{"a", "b"}}), std::invalid_argument);
}

// ---------------------------------------------------------------- 13a tokenizer

TEST(Tokenizer13a, Rules) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"The dog bit the man.", "The dog bit the man ."},
      {"It wasn't surprising.", "It wasn't surprising ."},           // apostrophe is not split
      {"Hello, world!", "Hello , world !"},
      {"3.5 and 1,000 and 3.", "3.5 and 1,000 and 3 ."},             // digits keep . and , inside numbers
      {"well-known 1990-2000 a-1", "well-known 1990 - 2000 a-1"},    // dash splits only after a digit
      {"a.b", "a . b"},
      {"a..", "a . ."},                                               // non-overlapping re.sub semantics
      {".5 ,5 5.", ". 5 , 5 5 ."},
      {"x...y", "x . . . y"},
      {"&quot;quoted&quot; &amp; &lt;b&gt;", "\" quoted \" & < b >"},
      {"&amp;lt;", "<"},                                              // &amp; first, then &lt;
      {"&apos; &#39;", "& apos ; & # 39 ;"},                           // only four entities are unescaped
      {"a<skipped>b", "ab"},
      {"hyphen-\nated line\nbreak", "hyphenated line break"},
      {"{[(a)]} $5 @x #y /z\\ ^_` |~ *+=;:?", "{ [ ( a ) ] } $ 5 @ x # y / z \\ ^ _ ` | ~ * + = ; : ?"},
      {"  spaced \t out  ", "spaced out"},
      {"producţia alb;", "producţia alb ;"},
      {"Zürich, München.", "Zürich , München ."},                    // non-ASCII letters are [^0-9]
      {"a\u00A0b", "a b"},                                            // NBSP is whitespace for str.split()
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(tokenize_13a(c.in), c.out) << "input: " << c.in;
}

TEST(Tokenizer13a, TrailingWhitespaceAndInvalidUtf8) {
  EXPECT_EQ(rstrip_whitespace("ab \t\u3000"), "ab");
  EXPECT_EQ(bleu_tokens("a-\n", BleuTokenizer::k13a), (std::vector<std::string>{"a-"}));  // rstrip first
  EXPECT_EQ(split_whitespace(" a  b\u2003c "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_THROW(tokenize_13a("\xc3("), std::invalid_argument);
}
