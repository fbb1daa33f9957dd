// Captioning corpora in the layout real users have: Karpathy's split files
// (dataset_flickr8k.json, dataset_flickr30k.json, dataset_coco.json) over a
// folder of images, and attn's generated scenes (`attn caption data`), which
// use the same layout plus each object's box and the object each caption word
// names.
//
//   {"dataset": "coco",
//    "images": [{"filepath": "val2014", "filename": "COCO_val2014_000000391895.jpg",
//                "split": "test",                          // train | val | test | restval
//                "sentences": [{"tokens": ["a", "man", ...], "raw": "A man ...", ...}, ...],
//                ...}, ...]}
//
// Keys not listed here (imgid, sentids, cocoid, ...) are ignored. An image's
// file is image_root / filepath / filename (filepath optional: Flickr8k has
// none). Restval is COCO's fifth split, which Karpathy's code trains on.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace attn::data {

// An object of a generated scene (absent in real corpora).
struct CaptionObject {
  std::string shape, colour, size;  // "circle", "red", "small", ...
  std::array<int, 4> box{};         // [x0, y0, x1, y1] pixels of the image, x1 and y1 exclusive
  double visible = 1.0;             // share of the object's pixels not hidden by objects in front
};

struct Caption {
  std::vector<std::string> tokens;  // [words] the caption's tokens, lower-case as in Karpathy's files
  std::string raw;                  // the caption as written ("" when the file has none)
  std::vector<int> refs;            // [words] the object (index into objects) each token names, -1 for none;
                                    // empty when the file has no refs (real corpora)
};

struct CaptionImage {
  std::string path;                   // image_root / filepath / filename
  std::string filename;               // as in the file
  std::string split;                  // train, val, test or restval
  std::vector<Caption> captions;      // [captions] at least one
  std::vector<CaptionObject> objects; // [objects] generated scenes only
  int width = 0, height = 0;          // pixels when the file says (generated scenes; needed with objects), else 0;
                                      // in [1, kMaxCaptionImageSide]
  int index = 0;                      // position in the file's "images" list
};

struct CaptionCorpus {
  std::string dataset;               // the file's "dataset" ("flickr8k", "coco", "shapes", ...), "" when absent
  std::vector<CaptionImage> images;  // in file order
};

// The largest "width" or "height" a file may give: above JPEG's largest side
// (65,500) and any photograph's, and small enough that box arithmetic stays in int.
constexpr int kMaxCaptionImageSide = 65536;

struct CaptionReadOptions {
  bool check_files = true;  // every image file must exist (one stat per image)
};

// Reads a Karpathy-style split file. Throws std::invalid_argument naming the
// file, the image's index and the field ("dataset_coco.json: images[12].sentences[3].tokens:
// expected a list of strings"), or the missing image file. Every number is
// checked, never wrapped: width and height in [1, kMaxCaptionImageSide], boxes
// whole pixels inside the image, refs -1 or an index into the image's objects,
// visible in [0, 1]. Values are quoted in messages bounded (config::describe),
// so no input makes a message long or nests the reader deep.
CaptionCorpus read_caption_corpus(const std::string& json_path, const std::string& image_root,
                                  const CaptionReadOptions& options = {});

// The images whose split is one of `splits`, in file order (e.g. {"train", "restval"}).
// Throws std::invalid_argument when a name is not a split.
std::vector<CaptionImage> select_splits(const CaptionCorpus& corpus, const std::vector<std::string>& splits);

// The split names a file may use.
const std::vector<std::string>& caption_split_names();

}  // namespace attn::data
