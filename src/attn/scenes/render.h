// Drawing scenes with cairo (antialiased): the picture itself, and each
// object's coverage, from which the sampler measures how much of an object
// the others hide. Internal to scenes/.
#pragma once
#include <cairo.h>

#include <vector>

#include "attn/image/image.h"
#include "attn/scenes/scene.h"

namespace attn::scenes {

// The object's outline as the current path of `cr` (pixel coordinates).
void object_path(cairo_t* cr, const SceneObject& o);

// [size * size] how much of each pixel the object covers, in [0, 1] (row-major).
std::vector<float> coverage(const SceneObject& o, int size);

// The scene's picture: textured background, objects back to front (depth
// order) with a little shading, then per-pixel noise. Deterministic: the
// texture and the noise come from scene.pixel_seed.
image::Image render_scene(const Scene& scene);

// An Image as a cairo RGB24 surface (the caller destroys it), and back.
cairo_surface_t* to_surface(const image::Image& img);
image::Image from_surface(cairo_surface_t* surface);

}  // namespace attn::scenes
