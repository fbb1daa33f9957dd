// `attn caption data`: a whole generated captioning data set on disk, in the
// Karpathy split layout that data/caption_corpus.h reads, plus each object's
// box and the object each caption word names (docs/captioning.md, "attn caption data").
//
//   DIR/dataset_shapes.json   the index: images, splits, captions, objects
//   DIR/images/000000.png ... one RGB PNG per scene
#pragma once
#include <cstdint>
#include <string>

namespace attn::scenes {

struct DatasetOptions {
  std::string out_dir;
  int64_t count = 1000;  // images in all
  uint64_t seed = 1;
  int size = 64;         // width = height of every image, pixels
  int64_t val = -1;      // images in the val split (-1: count / 10)
  int64_t test = -1;     // images in the test split (-1: count / 10)
};

struct DatasetSummary {
  std::string json_path;
  int64_t train = 0, val = 0, test = 0;
  int64_t objects[3] = {0, 0, 0};  // images with 1, 2, 3 objects
  int64_t occluded = 0;            // objects partly hidden (visible < 0.99)
};

// The file name of the index inside out_dir.
constexpr const char* kDatasetJson = "dataset_shapes.json";

// Writes the data set. Image i depends on (seed, i) only, so a larger count
// extends a smaller one with the same first images; splits are by position:
// train first, then val, then test. Every file is replaced atomically, the
// JSON last. Throws std::invalid_argument for bad options, std::runtime_error
// naming the path on a failed write.
DatasetSummary write_dataset(const DatasetOptions& options);

}  // namespace attn::scenes
