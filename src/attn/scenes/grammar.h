// The captions of a generated scene: four phrasings, each a fixed function of
// the scene (no random choice), so that an image's references are exactly the
// captions a model that read the scene right could produce. Objects o1..on are
// in canonical order (left to right by box centre); NP(o) = "a SIZE COLOUR SHAPE";
// REL(a, b) = scene.h's relation: "left of" | "right of" | "above" | "below".
//
//   0 canonical:  NP(o1) REL(o1,o2) NP(o2) REL(o2,o3) NP(o3)
//                 "a small red circle left of a large blue square above a small green star"
//   1 reverse:    "there is" NP(on) REL(on,on-1) NP(on-1) ... NP(o1)
//                 "there is a small green star below a large blue square right of a small red circle"
//   2 count:      COUNT "shape(s):" NP(o1) ", " ... "and" NP(on)     (COUNT = one | two | three)
//                 "three shapes: a small red circle, a large blue square and a small green star"
//   3 image of:   "an image of" NP(on) ", " ... "and" NP(o1)          (right to left)
//
// Each phrasing starts with its own word (a / there / one|two|three / an), so a
// decoder commits to one at the first word and everything after it is fixed by
// the image. Tokens are lower-case words without punctuation, as in Karpathy's
// files; raw is the sentence as written (capital letter, commas, colon, full stop).
#pragma once
#include <string>
#include <vector>

#include "attn/scenes/scene.h"

namespace attn::scenes {

struct SceneCaption {
  std::string phrasing;             // "canonical", "reverse", "count", "image of"
  std::vector<std::string> tokens;  // [words]
  std::vector<int> refs;            // [words] the object (index into scene.objects) a size, colour or
                                    // shape word names; -1 for every other word
  std::string raw;                  // "A small red circle left of a large blue square."
};

// The four captions, in the order above. Throws std::invalid_argument for a
// scene without objects or with more than three.
std::vector<SceneCaption> describe(const Scene& scene);

}  // namespace attn::scenes
