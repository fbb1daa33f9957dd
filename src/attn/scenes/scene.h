// The scenes of attn's generated captioning data set: one to three coloured
// shapes on a textured, noisy background, placed so that what the captions
// say about them (grammar.h) is never a close call: objects far enough apart
// left to right, each relation clearly horizontal or clearly vertical, every
// object at least kMinVisible visible however the others overlap it, and two
// objects of one colour never touching (they would merge into one blob).
//
// Coordinates are pixels of a size x size image, y downwards; every length is
// scaled by size / 64, so a 128-pixel scene is a 64-pixel one drawn finer.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "attn/tensor/random.h"

namespace attn::scenes {

// The words of the grammar's closed classes, in the order their indices use.
const std::vector<std::string>& shape_names();   // circle square triangle diamond star
const std::vector<std::string>& colour_names();  // red orange yellow green blue purple
const std::vector<std::string>& size_names();    // small large
const std::vector<std::string>& background_names();  // noise stripes checks gradient blobs

// The sRGB colour (each channel in [0, 1]) a colour name is drawn with, before jitter.
std::array<double, 3> colour_rgb(int colour);

struct SceneObject {
  int shape = 0, colour = 0, size = 0;  // indices into the name lists
  double cx = 0, cy = 0;                // centre of the shape (circle centre, polygon centroid), pixels
  double radius = 0;                    // the shape's scale: circle radius; polygons are sized relative to it
  double angle = 0;                     // rotation, radians (small: a square never turns into a diamond)
  std::array<double, 3> rgb{};          // fill colour after jitter
  std::vector<std::array<double, 2>> outline;  // polygon vertices (empty for a circle), pixels
  std::array<int, 4> box{};             // [x0, y0, x1, y1] pixels covering the shape, x1 and y1 exclusive
  int depth = 0;                        // drawing order: 0 is drawn first (at the back)
  double visible = 1;                   // share of its coverage not hidden by objects drawn later
  double box_cx() const { return 0.5 * (box[0] + box[2]); }
  double box_cy() const { return 0.5 * (box[1] + box[3]); }
};

struct Scene {
  int size = 64;                    // width = height, pixels
  std::vector<SceneObject> objects; // [1..3] in canonical order: left to right by box centre
  int background = 0;               // index into background_names()
  std::array<double, 3> base{};     // background colour
  double texture_amplitude = 0;     // strength of the background texture, [0, 1] units
  double noise_sigma = 0;           // per-pixel Gaussian noise over the finished image
  uint64_t pixel_seed = 0;          // seed of the background texture and the pixel noise
};

// Geometry rules the sampler enforces (scaled by size / 64 where lengths).
constexpr double kMinGapX = 8.0;         // neighbours in left-to-right order: centres this far apart in x
constexpr double kMaxFlatRatio = 0.6;    // "left of" only when |dy| <= 0.6 |dx| ...
constexpr double kMinSteepRatio = 1.6;   // ... "above"/"below" only when |dy| >= 1.6 |dx|; nothing in between
constexpr double kMinVisible = 0.6;      // every object at least 60% visible

// The spatial relation of object `b` seen from object `a` (their box centres):
// "left of" / "right of" (a is left / right of b) when horizontal dominates, else "above" / "below".
std::string relation(const SceneObject& a, const SceneObject& b);

// A scene drawn from `rng`: one object with probability 0.2, two 0.4, three 0.4;
// distinct (shape, colour, size) triples. Throws std::invalid_argument when size < 32.
Scene sample_scene(Rng& rng, int size);

}  // namespace attn::scenes
