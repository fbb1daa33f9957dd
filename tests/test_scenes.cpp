// scenes/: attn's generated captioning data set. The grammar on hand-built
// scenes, the sampler's promises (clear relations, distinct objects, visible
// enough, boxes that hold the shape) over many scenes, the pictures (each
// object's colour where its box says), determinism of the files for a seed,
// the JSON read back by the Karpathy reader, and the commands.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "attn/data/caption_corpus.h"
#include "attn/image/codec.h"
#include "attn/scenes/contact_sheet.h"
#include "attn/scenes/dataset.h"
#include "attn/scenes/grammar.h"
#include "attn/scenes/render.h"
#include "attn/scenes/scene.h"
#include "attn/viz/output.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::read_bytes;
using attn::testing::run_attn;
using attn::testing::TempDir;
using scenes::Scene;
using scenes::SceneObject;

int index_of(const std::vector<std::string>& names, const std::string& name) {
  return int(std::find(names.begin(), names.end(), name) - names.begin());
}

// An object of the given words with its box centred at (cx, cy), `half` wide each side.
SceneObject object(const std::string& size, const std::string& colour, const std::string& shape, int cx, int cy,
                   int half = 5) {
  SceneObject o;
  o.size = index_of(scenes::size_names(), size);
  o.colour = index_of(scenes::colour_names(), colour);
  o.shape = index_of(scenes::shape_names(), shape);
  o.cx = cx, o.cy = cy, o.radius = half;
  o.box = {cx - half, cy - half, cx + half, cy + half};
  return o;
}

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (const auto& t : tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

TEST(SceneGrammar, FourPhrasingsOfHandBuiltScenes) {
  Scene two;
  two.objects = {object("small", "red", "circle", 15, 30), object("large", "blue", "square", 45, 34)};
  auto c = scenes::describe(two);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(joined(c[0].tokens), "a small red circle left of a large blue square");
  EXPECT_EQ(c[0].raw, "A small red circle left of a large blue square.");
  EXPECT_EQ(c[0].refs, (std::vector<int>{-1, 0, 0, 0, -1, -1, -1, 1, 1, 1}));
  EXPECT_EQ(joined(c[1].tokens), "there is a large blue square right of a small red circle");
  EXPECT_EQ(c[2].raw, "Two shapes: a small red circle and a large blue square.");
  EXPECT_EQ(joined(c[2].tokens), "two shapes a small red circle and a large blue square");
  EXPECT_EQ(c[3].raw, "An image of a large blue square and a small red circle.");
  EXPECT_EQ(c[3].phrasing, "image of");
  Scene three;  // the middle object well below the first, the last well above the middle
  three.objects = {object("large", "green", "star", 12, 10), object("small", "purple", "diamond", 22, 40),
                   object("small", "yellow", "triangle", 40, 12)};
  c = scenes::describe(three);
  EXPECT_EQ(joined(c[0].tokens), "a large green star above a small purple diamond below a small yellow triangle");
  EXPECT_EQ(c[0].refs[c[0].tokens.size() - 1], 2);
  EXPECT_EQ(joined(c[1].tokens), "there is a small yellow triangle above a small purple diamond below a large green star");
  EXPECT_EQ(c[2].raw, "Three shapes: a large green star, a small purple diamond and a small yellow triangle.");
  EXPECT_EQ(c[3].raw, "An image of a small yellow triangle, a small purple diamond and a large green star.");
  Scene one;
  one.objects = {object("small", "orange", "triangle", 30, 30)};
  c = scenes::describe(one);
  EXPECT_EQ(c[0].raw, "A small orange triangle.");
  EXPECT_EQ(c[1].raw, "There is a small orange triangle.");
  EXPECT_EQ(c[2].raw, "One shape: a small orange triangle.");
  EXPECT_EQ(c[3].raw, "An image of a small orange triangle.");
  EXPECT_THROW(scenes::describe(Scene{}), std::invalid_argument);
}

// Over many sampled scenes: what the captions rely on holds, and the variety the data set promises is there.
TEST(SceneSampler, LayoutsAreClearAndVaried) {
  std::map<std::string, int> relations, counts;
  std::set<std::string> words;
  int occluded = 0, scenes_n = 400;
  for (int i = 0; i < scenes_n; ++i) {
    Rng rng(1000 + uint64_t(i));
    const Scene s = scenes::sample_scene(rng, 64);
    const size_t n = s.objects.size();
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 3u);
    counts[std::to_string(n)]++;
    std::set<std::array<int, 3>> kinds;
    for (size_t k = 0; k < n; ++k) {
      const SceneObject& o = s.objects[k];
      kinds.insert({o.shape, o.colour, o.size});
      ASSERT_GE(o.visible, scenes::kMinVisible);
      occluded += o.visible < 0.99;
      ASSERT_GE(o.box[0], 0);
      ASSERT_LE(o.box[2], 64);
      ASSERT_GE(o.box[1], 0);
      ASSERT_LE(o.box[3], 64);
      words.insert(scenes::shape_names()[size_t(o.shape)]);
      words.insert(scenes::colour_names()[size_t(o.colour)]);
      words.insert(scenes::size_names()[size_t(o.size)]);
      if (k + 1 < n) {
        const double dx = s.objects[k + 1].box_cx() - o.box_cx(), dy = std::abs(s.objects[k + 1].box_cy() - o.box_cy());
        ASSERT_GE(dx, scenes::kMinGapX) << "scene " << i << ": objects not left to right with a clear gap";
        ASSERT_TRUE(dy <= scenes::kMaxFlatRatio * dx || dy >= scenes::kMinSteepRatio * dx) << "scene " << i;
        relations[scenes::relation(o, s.objects[k + 1])]++;
      }
    }
    ASSERT_EQ(kinds.size(), n) << "scene " << i << ": two objects with the same description";
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n; ++b) {
        const auto &p = s.objects[a].box, &q = s.objects[b].box;
        const bool apart = p[2] < q[0] || q[2] < p[0] || p[3] < q[1] || q[3] < p[1];
        ASSERT_TRUE(s.objects[a].colour != s.objects[b].colour || apart) << "scene " << i << ": one colour, touching";
      }
  }
  EXPECT_EQ(words.size(), scenes::shape_names().size() + scenes::colour_names().size() + scenes::size_names().size());
  EXPECT_GT(relations["above"], 20);
  EXPECT_GT(relations["below"], 20);
  EXPECT_GT(relations["left of"], 100);
  EXPECT_EQ(relations["right of"], 0) << "canonical order is left to right";
  EXPECT_NEAR(counts["1"], 0.2 * scenes_n, 0.06 * scenes_n);
  EXPECT_NEAR(counts["2"], 0.4 * scenes_n, 0.07 * scenes_n);
  EXPECT_GT(occluded, 20) << "some objects partly hidden";
}

// Each object's coverage lies inside its box and touches every side of it; the
// picture shows the object's colour where it is visible.
TEST(SceneSampler, BoxesHoldTheObjectsAndThePictureShowsThem) {
  for (int i = 0; i < 60; ++i) {
    Rng rng(77 + uint64_t(i));
    const Scene s = scenes::sample_scene(rng, 64);
    const image::Image img = scenes::render_scene(s);
    std::vector<std::vector<float>> cov;
    for (const SceneObject& o : s.objects) cov.push_back(scenes::coverage(o, 64));
    for (size_t k = 0; k < s.objects.size(); ++k) {
      const SceneObject& o = s.objects[k];
      int x0 = 64, y0 = 64, x1 = 0, y1 = 0;
      double sum[3] = {0, 0, 0}, n = 0;
      for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 64; ++x) {
          const float v = cov[k][size_t(y * 64 + x)];
          if (v <= 0.0f) continue;
          x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x + 1), y1 = std::max(y1, y + 1);
          bool front_clear = v >= 0.999f;
          for (size_t j = 0; j < s.objects.size(); ++j)
            if (s.objects[j].depth > o.depth && cov[j][size_t(y * 64 + x)] > 0) front_clear = false;
          if (!front_clear) continue;
          for (int c = 0; c < 3; ++c) sum[c] += img.at(y, x, c);
          n += 1;
        }
      EXPECT_GE(x0, o.box[0]);
      EXPECT_GE(y0, o.box[1]);
      EXPECT_LE(x1, o.box[2]);
      EXPECT_LE(y1, o.box[3]);
      // tight: a side at most one pixel beyond the drawn shape (a star's tip may cover too little to show)
      EXPECT_LE(std::max({x0 - o.box[0], o.box[2] - x1, y0 - o.box[1], o.box[3] - y1}), 1) << "scene " << i << ": box not tight";
      ASSERT_GT(n, 5) << "scene " << i << " object " << k << " shows no whole pixel";
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(sum[c] / n, o.rgb[size_t(c)], 0.12) << "scene " << i << " object " << k << " channel " << c;
    }
  }
}

std::string listing(const std::string& dir) {
  std::string s;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) names.push_back(std::filesystem::relative(e.path(), dir).string());
  std::sort(names.begin(), names.end());
  for (const auto& n : names) s += n + "\n";
  return s;
}

TEST(CaptionData, SameSeedSameFilesOtherSeedOtherFiles) {
  TempDir a("caption_data_a"), b("caption_data_b"), c("caption_data_c"), d("caption_data_d");
  scenes::DatasetOptions o;
  o.count = 12, o.seed = 5;
  o.out_dir = a.path;
  scenes::write_dataset(o);
  o.out_dir = b.path;
  scenes::write_dataset(o);
  ASSERT_EQ(listing(a.path), listing(b.path));
  ASSERT_NE(listing(a.path).find("images/000011.png"), std::string::npos) << listing(a.path);
  for (const auto& e : std::filesystem::recursive_directory_iterator(a.path))
    if (e.is_regular_file()) {
      const std::string rel = std::filesystem::relative(e.path(), a.path).string();
      EXPECT_EQ(read_bytes(e.path().string()), read_bytes(b.path + "/" + rel)) << rel << " differs for the same seed";
    }
  o.out_dir = c.path, o.seed = 6;
  scenes::write_dataset(o);
  EXPECT_NE(read_bytes(a.path + "/dataset_shapes.json"), read_bytes(c.path + "/dataset_shapes.json"));
  int same_images = 0;
  for (int i = 0; i < 12; ++i) {
    const std::string f = "/images/0000" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ".png";
    same_images += read_bytes(a.path + f) == read_bytes(c.path + f);
  }
  EXPECT_EQ(same_images, 0) << "another seed, other pictures";
  // a larger count keeps the first images
  o.out_dir = d.path, o.seed = 5, o.count = 20;
  scenes::write_dataset(o);
  EXPECT_EQ(read_bytes(a.path + "/images/000007.png"), read_bytes(d.path + "/images/000007.png"));
}

TEST(CaptionData, JsonReadsBackWithBoxesAndRefs) {
  TempDir dir("caption_data_json");
  scenes::DatasetOptions o;
  o.out_dir = dir.path, o.count = 30, o.seed = 9, o.size = 96, o.val = 4, o.test = 5;
  const scenes::DatasetSummary summary = scenes::write_dataset(o);
  EXPECT_EQ(summary.train, 21);
  EXPECT_EQ(summary.objects[0] + summary.objects[1] + summary.objects[2], 30);
  const data::CaptionCorpus corpus = data::read_caption_corpus(summary.json_path, dir.path);
  EXPECT_EQ(corpus.dataset, "shapes");
  ASSERT_EQ(corpus.images.size(), 30u);
  EXPECT_EQ(data::select_splits(corpus, {"train"}).size(), 21u);
  EXPECT_EQ(data::select_splits(corpus, {"val"}).size(), 4u);
  EXPECT_EQ(data::select_splits(corpus, {"test"}).size(), 5u);
  EXPECT_EQ(corpus.images[25].split, "test") << "splits by position: train, val, test";
  for (const data::CaptionImage& img : corpus.images) {
    const image::Image pixels = image::read_image(img.path);
    ASSERT_EQ(pixels.width, 96);
    ASSERT_EQ(img.width, 96);
    ASSERT_EQ(img.captions.size(), 4u);
    ASSERT_GE(img.objects.size(), 1u);
    for (const data::Caption& c : img.captions) {
      ASSERT_EQ(c.refs.size(), c.tokens.size());
      std::set<int> named;
      for (size_t t = 0; t < c.tokens.size(); ++t) {
        if (c.refs[t] < 0) continue;
        const data::CaptionObject& obj = img.objects[size_t(c.refs[t])];
        EXPECT_TRUE(c.tokens[t] == obj.shape || c.tokens[t] == obj.colour || c.tokens[t] == obj.size)
            << img.filename << ": '" << c.tokens[t] << "' refers to a " << obj.size << " " << obj.colour << " " << obj.shape;
        named.insert(c.refs[t]);
      }
      EXPECT_EQ(named.size(), img.objects.size()) << img.filename << ": every caption names every object";
    }
    for (size_t k = 0; k + 1 < img.objects.size(); ++k)  // objects listed left to right
      EXPECT_LT(img.objects[k].box[0] + img.objects[k].box[2], img.objects[k + 1].box[0] + img.objects[k + 1].box[2]);
  }
}

TEST(CaptionData, CommandsWriteDataAndSheet) {
  TempDir dir("caption_data_cli");
  auto r = run_attn("caption data --out " + dir.path + "/set --count 14 --seed 3", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("12 train, 1 val, 1 test images"), std::string::npos) << r.out;
  r = run_attn("caption sheet " + dir.path + "/set/dataset_shapes.json -o " + dir.path + "/sheet.png --count 6 --boxes",
               dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const image::Image sheet = image::read_image(dir.path + "/sheet.png");
  EXPECT_GT(sheet.width, 3 * 192);
  r = run_attn("caption data --out " + dir.path + "/bad --count 0", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--count must be at least 1, got 0"), std::string::npos) << r.err;
  r = run_attn("caption data --out " + dir.path + "/bad --count 10 --val 6 --test 6", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--val 6 and --test 6"), std::string::npos) << r.err;
  r = run_attn("caption sheet " + dir.path + "/set/dataset_shapes.json -o " + dir.path + "/sheet.gif", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("unknown figure format"), std::string::npos) << r.err;
  r = run_attn("caption", dir.path);
  EXPECT_NE(r.status, 0) << "caption needs a subcommand";
}

// Found by a tester: `caption sheet` over a 1 x 100000 picture stopped with a
// bare "invalid value (typically too big) for the size of the input": cairo
// has no surface over 32767 pixels a side. Such a picture is now drawn from
// every k-th pixel at the same size; a figure itself over the limit is
// refused before drawing, saying so.
TEST(CaptionData, SheetDrawsAPictureOverCairosSideLimit) {
  TempDir dir("caption_sheet_tall");
  data::CaptionCorpus corpus;
  data::CaptionImage tall;
  tall.path = dir.path + "/tall.png";
  tall.split = "test";
  tall.captions.push_back({{"a", "thin", "line"}, "", {}});
  image::write_png(tall.path, image::Image(1, 100000, 0.2f), false);
  corpus.images.push_back(tall);
  scenes::SheetOptions o;
  scenes::write_contact_sheet(corpus, dir.path + "/sheet.png", o);
  EXPECT_EQ(image::read_image(dir.path + "/sheet.png").width, 10 + o.cell + 10);

  // what is drawn (the sheet's 0.002-pixel line is too thin to see): a 40000 x 40
  // picture, dark left half and light right half, at half size
  image::Image halves(40000, 40, 0.9f);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 20000; ++x)
      for (int c = 0; c < 3; ++c) halves.at(y, x, c) = 0.1f;
  const std::string png = viz::render_cairo(viz::Format::Png, 20000, 20, [&](cairo_t* cr) {
    viz::draw_rgb(cr, halves.rgb.data(), halves.width, halves.height, 0, 0, 0.5);
  });
  const image::Image drawn = image::decode_image(png, "drawn");
  EXPECT_NEAR(drawn.at(10, 5000, 0), 0.1f, 0.02f);
  EXPECT_NEAR(drawn.at(10, 15000, 0), 0.9f, 0.02f);

  image::write_png(tall.path, image::Image(8, 8, 0.2f), false);
  corpus.images.assign(171, tall);  // 10 + 171 * 202 pixels wide
  o.count = o.columns = 171;
  try {
    scenes::write_contact_sheet(corpus, dir.path + "/wide.png", o);
    ADD_FAILURE() << "a figure over cairo's limit was drawn";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a figure of 34552 x "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("over cairo's limit of 32767 pixels a side"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attn
