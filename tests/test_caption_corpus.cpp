// data/caption_corpus.h: Karpathy split files (Flickr8k and COCO layouts) read
// into image paths and tokenised captions per split; every malformed field
// refused naming the file, the image index and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "attn/data/caption_corpus.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::TempDir;
using attn::testing::write_bytes;
using attn::testing::run_attn;
using attn::testing::CommandResult;

// Three images: Flickr8k style (no filepath), COCO style (filepath, restval), and a
// generated scene (objects, refs); every image file present (empty files: the
// reader only checks they exist).
const char* kCorpus = R"({"dataset": "mixed", "images": [
 {"filename": "a.jpg", "imgid": 0, "split": "train", "sentids": [0, 1],
  "sentences": [{"tokens": ["a", "dog", "runs"], "raw": "A dog runs.", "imgid": 0, "sentid": 0},
                {"tokens": ["dog"], "raw": "Dog", "imgid": 0, "sentid": 1}]},
 {"filepath": "val2014", "filename": "b.jpg", "cocoid": 7, "split": "restval",
  "sentences": [{"tokens": ["two", "cats"]}]},
 {"filepath": "images", "filename": "c.png", "split": "test", "width": 64, "height": 64,
  "objects": [{"shape": "circle", "colour": "red", "size": "small", "box": [1, 2, 13, 14], "visible": 0.8}],
  "sentences": [{"tokens": ["a", "small", "red", "circle"], "refs": [-1, 0, 0, 0]}]}]})";

std::string make_corpus(const TempDir& dir, const std::string& json) {
  namespace fs = std::filesystem;
  fs::create_directories(dir.path + "/val2014");
  fs::create_directories(dir.path + "/images");
  for (const char* f : {"/a.jpg", "/val2014/b.jpg", "/images/c.png"}) write_bytes(dir.path + f, "x");
  write_bytes(dir.path + "/dataset.json", json);
  return dir.path + "/dataset.json";
}

TEST(CaptionCorpus, ReadsKarpathyLayoutPerSplit) {
  TempDir dir("caption_corpus");
  const std::string json = make_corpus(dir, kCorpus);
  const data::CaptionCorpus c = data::read_caption_corpus(json, dir.path);
  EXPECT_EQ(c.dataset, "mixed");
  ASSERT_EQ(c.images.size(), 3u);
  EXPECT_EQ(c.images[0].path, dir.path + "/a.jpg");
  EXPECT_EQ(c.images[1].path, dir.path + "/val2014/b.jpg");
  EXPECT_EQ(c.images[2].path, dir.path + "/images/c.png");
  ASSERT_EQ(c.images[0].captions.size(), 2u);
  EXPECT_EQ(c.images[0].captions[0].tokens, (std::vector<std::string>{"a", "dog", "runs"}));
  EXPECT_EQ(c.images[0].captions[0].raw, "A dog runs.");
  EXPECT_TRUE(c.images[0].captions[0].refs.empty());
  EXPECT_EQ(c.images[1].captions[0].raw, "");
  const data::CaptionImage& scene = c.images[2];
  EXPECT_EQ(scene.width, 64);
  ASSERT_EQ(scene.objects.size(), 1u);
  EXPECT_EQ(scene.objects[0].shape, "circle");
  EXPECT_EQ(scene.objects[0].box, (std::array<int, 4>{1, 2, 13, 14}));
  EXPECT_DOUBLE_EQ(scene.objects[0].visible, 0.8);
  EXPECT_EQ(scene.captions[0].refs, (std::vector<int>{-1, 0, 0, 0}));
  // Karpathy's training set is train + restval
  const auto train = data::select_splits(c, {"train", "restval"});
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[0].filename, "a.jpg");
  EXPECT_EQ(train[1].filename, "b.jpg");
  const auto test = data::select_splits(c, {"test"});
  ASSERT_EQ(test.size(), 1u);
  EXPECT_EQ(test[0].index, 2);
  EXPECT_TRUE(data::select_splits(c, {"val"}).empty());
  EXPECT_THROW(data::select_splits(c, {"dev"}), std::invalid_argument);
}

// `from` replaced by `to` in the good corpus must be refused with `message`.
void expect_refused(const std::string& from, const std::string& to, const std::string& message) {
  TempDir dir("caption_corpus_bad");
  std::string json = kCorpus;
  const size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  json.replace(at, from.size(), to);
  const std::string path = make_corpus(dir, json);
  try {
    data::read_caption_corpus(path, dir.path);
    ADD_FAILURE() << "accepted " << to;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": " + message), std::string::npos) << e.what();
  }
}

TEST(CaptionCorpus, ErrorsNameTheFieldAndImage) {
  expect_refused(R"("split": "restval")", R"("split": "dev")", "images[1].split: expected train, val, test or restval, got \"dev\"");
  expect_refused(R"("split": "restval",)", "", "images[1].split: expected train, val, test or restval, got \"\"");
  expect_refused(R"("filename": "a.jpg", )", "", "images[0].filename: missing or empty");
  expect_refused(R"("filename": "b.jpg")", R"("filename": "nope.jpg")", "images[1].filename: " );
  expect_refused(R"([{"tokens": ["two", "cats"]}])", "[]", "images[1].sentences: empty");
  expect_refused(R"({"tokens": ["dog"], "raw": "Dog")", R"({"tokens": "dog", "raw": "Dog")",
                 "images[0].sentences[1].tokens: expected a list");
  expect_refused(R"(["two", "cats"])", R"(["two", 2])", "images[1].sentences[0].tokens[1]: expected a string, got 2");
  expect_refused(R"(["two", "cats"])", R"(["two cats"])", "images[1].sentences[0].tokens[0]: token \"two cats\" contains white space");
  expect_refused(R"(["two", "cats"])", "[]", "images[1].sentences[0].tokens: empty");
  expect_refused(R"("refs": [-1, 0, 0, 0])", R"("refs": [-1, 0, 0])", "images[2].sentences[0].refs: 3 refs for 4 tokens");
  expect_refused(R"("refs": [-1, 0, 0, 0])", R"("refs": [-1, 0, 1, 0])",
                 "images[2].sentences[0].refs[2]: expected -1 or an object index below 1, got 1");
  expect_refused("[1, 2, 13, 14]", "[1, 2, 13, 65]",
                 "images[2].objects[0].box: [1, 2, 13, 65] is not a non-empty box inside the image of 64 x 64 pixels");
  expect_refused("[1, 2, 13, 14]", "[1, 2, 13]", "images[2].objects[0].box: expected [x0, y0, x1, y1]");
  expect_refused(R"("images": [)", R"("images": 3, "x": [)", "images: expected a list of images");
  expect_refused(R"({"dataset")", R"([{"dataset")", "not valid JSON");
}

// Found by a tester: numbers were narrowed with get<int>() and int(), so
// "width": 4294967296 became 0 ("size unknown"), which switched off the check
// that boxes lie inside the image, and a ref of 2^64 - 1 was read as -1.
// Every number is now checked in its range, naming the field.
TEST(CaptionCorpus, NumbersAreRangeCheckedNotWrapped) {
  expect_refused(R"("width": 64)", R"("width": 4294967296)", "images[2].width: 4294967296 outside [1, 65536]");
  expect_refused(R"("height": 64)", R"("height": 0)", "images[2].height: 0 outside [1, 65536]");
  expect_refused(R"("width": 64)", R"("width": -64)", "images[2].width: -64 outside [1, 65536]");
  expect_refused(R"("width": 64)", R"("width": 6.5)", "images[2].width: expected a whole number within 64 bits, got 6.5");
  expect_refused(R"("width": 64, )", "", "images[2].width: missing (an image with objects needs its size in pixels)");
  // the tester's box, inside a wrapped width before
  expect_refused("[1, 2, 13, 14]", "[10, 10, 3000, 3000]",
                 "images[2].objects[0].box: [10, 10, 3000, 3000] is not a non-empty box inside the image of 64 x 64 pixels");
  expect_refused("[1, 2, 13, 14]", "[1, 2, 4294967309, 14]",
                 "images[2].objects[0].box[2]: expected whole pixels, got 4294967309");
  expect_refused("[1, 2, 13, 14]", "[1, 2, 13.5, 14]", "images[2].objects[0].box[2]: expected whole pixels, got 13.5");
  expect_refused(R"("refs": [-1, 0, 0, 0])", R"("refs": [18446744073709551615, 0, 0, 0])",
                 "images[2].sentences[0].refs[0]: expected -1 or an object index below 1, got 18446744073709551615");
  expect_refused(R"("refs": [-1, 0, 0, 0])", R"("refs": [-1, 0, 4294967296, 0])",
                 "images[2].sentences[0].refs[2]: expected -1 or an object index below 1, got 4294967296");
  expect_refused(R"("refs": [-1, 0, 0, 0])", R"("refs": [-2, 0, 0, 0])",
                 "images[2].sentences[0].refs[0]: expected -1 or an object index below 1, got -2");
  expect_refused(R"("visible": 0.8)", R"("visible": 2)", "images[2].objects[0].visible: 2 outside [0, 1]");
}

// Found by a tester: an error message quoted the offending value with dump(),
// which recurses once per nesting level: a file of 1,000,000 '[' (or a token
// nested 100,000 deep) overflowed the stack (SIGSEGV), and 30,000 deep printed
// 60 KB of brackets. Run as `attn caption sheet` in a child process, so a
// regression crashes the child, not the test binary; the parse and the
// destruction of the nested value (nlohmann 3.11: both iterative) run too.
TEST(CaptionCorpus, DeeplyNestedFileIsRefusedBriefly) {
  TempDir dir("caption_corpus_deep");
  auto nested = [](size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  auto expect_brief_error = [&](const std::string& json, const std::string& message) {
    write_bytes(dir.path + "/deep.json", json);
    const CommandResult r = run_attn("caption sheet " + dir.path + "/deep.json -o " + dir.path + "/s.png", dir.path);
    EXPECT_EQ(r.status, 1) << "a crash: 139 (SIGSEGV, as the shell reports it)";
    EXPECT_NE(r.err.find(dir.path + "/deep.json: " + message), std::string::npos) << r.err.substr(0, 600);
    EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 600);
  };
  expect_brief_error(nested(1000000), "expected an object with a list of \"images\", got a list of 1 items");
  expect_brief_error(R"({"images": [{"filename": "a.png", "split": "test", "sentences": [{"tokens": ["a", )" +
                         nested(100000) + "]}]}]}",
                     "images[0].sentences[0].tokens[1]: expected a string, got a list of 1 items");
  expect_brief_error(R"({"dataset": )" + nested(30000) + R"(, "images": []})", "dataset: expected a string, got a list of 1 items");
  // an unterminated 1 MB string: nlohmann's parse error quotes the token it read, whole
  expect_brief_error(R"({"images": ")" + std::string(1000000, 'x'), "not valid JSON: [json.exception.parse_error.101]");
}

TEST(CaptionCorpus, MissingImageFileNamed) {
  TempDir dir("caption_corpus_missing");
  const std::string json = make_corpus(dir, kCorpus);
  std::filesystem::remove(dir.path + "/val2014/b.jpg");
  try {
    data::read_caption_corpus(json, dir.path);
    ADD_FAILURE() << "a missing image file was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("images[1].filename: " + dir.path + "/val2014/b.jpg: no such image file"),
              std::string::npos)
        << e.what();
  }
  // without the check the file is not looked at
  EXPECT_EQ(data::read_caption_corpus(json, dir.path, {/*check_files=*/false}).images.size(), 3u);
}

}  // namespace
}  // namespace attn
