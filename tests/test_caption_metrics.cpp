// eval/caption_metrics.h: exact match, caption BLEU, attention localisation
// and the object-count subsets, on hand-made cases and on a generated data set.
#include <gtest/gtest.h>

#include "attn/data/caption_corpus.h"
#include "attn/eval/caption_metrics.h"
#include "attn/scenes/dataset.h"
#include "attn/scenes/scene.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::TempDir;

using eval::caption_words;
using Words = std::vector<std::string>;

eval::ObjectLexicon scene_lexicon() { return {scenes::shape_names(), scenes::colour_names(), scenes::size_names()}; }

data::CaptionObject object(const std::string& size, const std::string& colour, const std::string& shape,
                           std::array<int, 4> box) {
  data::CaptionObject o;
  o.size = size;
  o.colour = colour;
  o.shape = shape;
  o.box = box;
  return o;
}

TEST(CaptionMetrics, WordsAreKarpathyTokens) {
  EXPECT_EQ(caption_words("Three shapes: a Small red circle, a star and  a cube.\n"),
            (Words{"three", "shapes", "a", "small", "red", "circle", "a", "star", "and", "a", "cube"}));
  EXPECT_EQ(caption_words(" . "), Words{});
}

TEST(CaptionMetrics, ExactMatchAgainstAnyReference) {
  const std::vector<Words> refs = {{"a", "red", "circle"}, {"there", "is", "a", "red", "circle"}};
  EXPECT_TRUE(eval::exact_match({"there", "is", "a", "red", "circle"}, refs));
  EXPECT_FALSE(eval::exact_match({"a", "red"}, refs));             // a prefix is not a match
  EXPECT_FALSE(eval::exact_match({"a", "red", "circle", "a"}, refs));
  const std::vector<eval::CaptionSample> samples = {
      {{"a", "red", "circle"}, refs}, {{"a", "blue", "circle"}, refs}, {caption_words("There is a red circle."), refs}};
  EXPECT_DOUBLE_EQ(eval::exact_match_accuracy(samples), 2.0 / 3.0);
  EXPECT_THROW(eval::exact_match_accuracy({}), std::invalid_argument);
  EXPECT_THROW(eval::exact_match_accuracy({{{"a"}, {}}}), std::invalid_argument);
}

TEST(CaptionMetrics, BleuReadsEveryReferenceOfEachImage) {
  // the second image's only match is its third reference; the first has one reference
  const std::vector<eval::CaptionSample> perfect = {
      {{"a", "small", "red", "circle", "left", "of", "a", "star"}, {{"a", "small", "red", "circle", "left", "of", "a", "star"}}},
      {{"there", "is", "a", "large", "blue", "square"},
       {{"a", "large", "blue", "square"}, {"one", "shape", "a", "large", "blue", "square"}, {"there", "is", "a", "large", "blue", "square"}}}};
  const eval::BleuScore s = eval::caption_bleu(perfect);
  EXPECT_DOUBLE_EQ(s.score, 100.0);
  EXPECT_EQ(s.num_refs, -1);  // references per image vary
  // no 4-gram in common with any reference: 0 without smoothing, between 0 and 100 with sacreBLEU's default
  std::vector<eval::CaptionSample> partial = perfect;
  partial[0].words = {"a", "small", "red", "star", "left", "of", "a", "circle"};
  partial[1].words = {"a", "large", "blue", "circle"};
  const double smoothed = eval::caption_bleu(partial).score;
  EXPECT_GT(smoothed, 0.0);
  EXPECT_LT(smoothed, 100.0);
}

TEST(CaptionMetrics, ObjectRefsReproduceTheSceneGrammarsRefs) {
  TempDir dir("caption_metrics_refs");
  scenes::DatasetOptions o;
  o.out_dir = dir.path;
  o.count = 40;
  o.seed = 7;
  scenes::write_dataset(o);
  const data::CaptionCorpus corpus = data::read_caption_corpus(dir.path + "/" + scenes::kDatasetJson, dir.path);
  size_t captions = 0;
  for (const data::CaptionImage& img : corpus.images)
    for (const data::Caption& c : img.captions) {
      int64_t unmatched = 0;
      ASSERT_EQ(eval::object_refs(c.tokens, img.objects, scene_lexicon(), &unmatched), c.refs) << c.raw;
      EXPECT_EQ(unmatched, 0);
      ++captions;
    }
  EXPECT_EQ(captions, 160u);
}

TEST(CaptionMetrics, ObjectPhrasesNamingNothingOrTwoObjectsAreSetApart) {
  const std::vector<data::CaptionObject> objects = {object("small", "red", "circle", {0, 0, 8, 8}),
                                                    object("large", "blue", "circle", {20, 0, 40, 20})};
  int64_t unmatched = 0;
  // "circle" alone fits both; "green circle" neither; "blue circle" and "small circle" one each
  EXPECT_EQ(eval::object_refs(caption_words("a circle and a green circle"), objects, scene_lexicon(), &unmatched),
            (std::vector<int>{-1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(unmatched, 3);
  EXPECT_EQ(eval::object_refs(caption_words("a blue circle above a small circle"), objects, scene_lexicon()),
            (std::vector<int>{-1, 1, 1, -1, -1, 0, 0}));
}

TEST(CaptionMetrics, CellBoxOverlapOnHandMadeBoxes) {
  const eval::GridGeometry g{64, 64, 4, 4};  // 16-pixel cells
  EXPECT_DOUBLE_EQ(eval::cell_box_overlap(g, 0, {0, 0, 16, 16}), 1.0);
  EXPECT_DOUBLE_EQ(eval::cell_box_overlap(g, 1, {0, 0, 16, 16}), 0.0);   // touching, not overlapping
  EXPECT_DOUBLE_EQ(eval::cell_box_overlap(g, 0, {8, 0, 40, 16}), 0.5);   // half the cell
  EXPECT_DOUBLE_EQ(eval::cell_box_overlap(g, 5, {20, 20, 24, 24}), 1.0); // a box inside the cell
  EXPECT_DOUBLE_EQ(eval::cell_box_overlap(g, 5, {12, 12, 20, 20}), 0.25);  // a small box over four cells
  EXPECT_DOUBLE_EQ(eval::cell_box_overlap({60, 30, 3, 5}, 7, {24, 10, 30, 40}), 0.5);  // cell 7: x [24, 36), y [10, 20)
  EXPECT_THROW(eval::cell_box_overlap(g, 16, {0, 0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(eval::cell_box_overlap({64, 64, 0, 4}, 0, {0, 0, 1, 1}), std::invalid_argument);
}

TEST(CaptionMetrics, LocalisationCountsWordsWhoseArgmaxCellIsOnTheirObject) {
  // 2x2 grid over 32x32: the red circle fills cell 0, the blue square cell 3
  const std::vector<data::CaptionObject> objects = {object("small", "red", "circle", {0, 0, 16, 16}),
                                                    object("large", "blue", "square", {16, 16, 32, 32})};
  const Words words = caption_words("a small red circle left of a large blue square");
  // argmax cells per word:            a  small red circle left of a large blue square
  const std::vector<int> argmax_cell = {1, 0, 0, 2, 1, 1, 1, 3, 2, 3};
  std::vector<float> attention;
  for (int cell : argmax_cell)
    for (int g = 0; g < 4; ++g) attention.push_back(g == cell ? 0.4f : 0.2f);
  const eval::GridGeometry grid{32, 32, 2, 2};
  const eval::Localisation all = eval::localise(words, attention, objects, grid, scene_lexicon());
  EXPECT_EQ(all.named, 6);       // small red circle, large blue square
  EXPECT_EQ(all.localised, 4);   // "circle" looked at cell 2, "blue" at cell 2
  EXPECT_EQ(all.unmatched, 0);
  EXPECT_DOUBLE_EQ(all.rate(), 4.0 / 6.0);
  eval::LocalisationOptions shapes_only;
  shapes_only.shape_words_only = true;
  const eval::Localisation nouns = eval::localise(words, attention, objects, grid, scene_lexicon(), shapes_only);
  EXPECT_EQ(nouns.named, 2);
  EXPECT_EQ(nouns.localised, 1);  // "square" only
  eval::Localisation sum = all;
  sum += nouns;
  EXPECT_EQ(sum.named, 8);
  EXPECT_EQ(sum.localised, 5);
  attention.pop_back();
  EXPECT_THROW(eval::localise(words, attention, objects, grid, scene_lexicon()), std::invalid_argument);
}

TEST(CaptionMetrics, ImagesWithObjectsSelectsTheSubset) {
  std::vector<data::CaptionImage> images(5);
  images[1].objects.resize(3);
  images[2].objects.resize(2);
  images[4].objects.resize(3);
  EXPECT_EQ(eval::images_with_objects(images, 3), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(eval::images_with_objects(images, 0), (std::vector<size_t>{0, 3}));
}

}  // namespace
}  // namespace attn
