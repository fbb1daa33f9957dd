// Caption metrics (issue 15's acceptance): exact-match accuracy, corpus BLEU-4
// against all references, attention localisation over attn's generated scenes,
// and the subset of images with a given number of objects.
//
// Words: captions are compared as Karpathy's split files store them
// (caption_words: lower case, split at whitespace, punctuation dropped), so a
// model's output "A small red circle." matches the reference tokens
// ["a", "small", "red", "circle"].
//
// Localisation. Grid: cell g = row * Gw + col (nn/cnn_encoder.h's order)
// covers x in [col * W / Gw, (col + 1) * W / Gw), y in [row * H / Gh,
// (row + 1) * H / Gh) of the W x H image the boxes are in. Which word names
// which object (object_refs): a shape word together with the colour and size
// words right before it ("small red circle", "red circle", "circle") is an
// object phrase; it names the one object of the image whose shape and given
// attributes match, and each of its words then names that object (as the
// scene grammar's refs do). A phrase that matches no object (the model named
// something not there) or several (an underspecified "circle" in a scene of
// two circles) names none, and is counted apart. A named word is localised
// when its attention's argmax cell mostly overlaps the object's box: the
// intersection covers at least min_overlap of the cell, or of the box (an
// object smaller than a cell). Soft attention's argmax is its largest weight
// (the lowest cell on ties); hard attention's is the chosen cell.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/caption_corpus.h"
#include "attn/eval/bleu.h"

namespace attn::eval {

// "A small red circle, left of..." -> {"a", "small", "red", "circle", "left", "of", ...}:
// ASCII letters lower-cased, split at whitespace, the punctuation . , : ; ! ? " dropped.
std::vector<std::string> caption_words(const std::string& text);

struct CaptionSample {
  std::vector<std::string> words;                    // [T] the generated caption (caption_words of the output)
  std::vector<std::vector<std::string>> references;  // [refs][words] every reference of its image, at least one
};

// True when `words` equals one of `references` word for word.
bool exact_match(const std::vector<std::string>& words, const std::vector<std::vector<std::string>>& references);

// Share of samples that exact_match, in [0, 1]. Throws std::invalid_argument
// for no samples or a sample without references (naming its index).
double exact_match_accuracy(const std::vector<CaptionSample>& samples);

// Corpus BLEU (eval/bleu.h, sacreBLEU's defaults: 4-grams) of the samples'
// words joined by spaces against all references of each (nrefs may vary).
BleuScore caption_bleu(const std::vector<CaptionSample>& samples, const BleuOptions& options = {});

// The closed word classes of a scene grammar (attn's: scenes/scene.h's shape_names(), ...).
struct ObjectLexicon {
  std::vector<std::string> shapes, colours, sizes;
};

// [T] for each word the object (index into `objects`) it names by the rule
// above, -1 for none; `unmatched` (optional) counts the words of object
// phrases that named no single object.
std::vector<int> object_refs(const std::vector<std::string>& words, const std::vector<data::CaptionObject>& objects,
                             const ObjectLexicon& lexicon, int64_t* unmatched = nullptr);

struct GridGeometry {
  int width = 0, height = 0;   // W, H: the image the boxes are in, pixels
  int grid_h = 0, grid_w = 0;  // Gh, Gw: the attention grid
};

// area(cell ∩ box) / min(area(cell), area(box)), in [0, 1]; box [x0, y0, x1, y1) pixels.
// Throws std::invalid_argument for a cell outside the grid or a geometry not positive.
double cell_box_overlap(const GridGeometry& grid, int cell, const std::array<int, 4>& box);

struct LocalisationOptions {
  bool shape_words_only = false;  // score only the shape word of each phrase (else size, colour and shape)
  double min_overlap = 0.5;       // see cell_box_overlap
};

struct Localisation {
  int64_t named = 0;      // words that name an object of the image
  int64_t localised = 0;  // of those, words whose argmax cell mostly overlaps the object's box
  int64_t unmatched = 0;  // words of object phrases that named no single object (not in `named`)
  double rate() const { return named ? double(localised) / double(named) : 0.0; }  // 0 when nothing was named
  Localisation& operator+=(const Localisation& o);
};

// One caption's localisation: words [T], attention [T, Gh * Gw] row-major
// (word t's weights; a search's extra end-of-sentence row dropped), objects
// with boxes in grid's W x H pixels. Throws std::invalid_argument when the
// attention is not [T, Gh * Gw].
Localisation localise(const std::vector<std::string>& words, const std::vector<float>& attention,
                      const std::vector<data::CaptionObject>& objects, const GridGeometry& grid,
                      const ObjectLexicon& lexicon, const LocalisationOptions& options = {});

// Indices (into `images`, in order) of the images with exactly `count` objects
// (the three-object subset: count = 3).
std::vector<size_t> images_with_objects(const std::vector<data::CaptionImage>& images, size_t count);

}  // namespace attn::eval
