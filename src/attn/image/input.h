// An image file as a model's input: read (codec.h), resized (resize.h) and
// normalised (image.h) in one call, the path every captioning batch takes.
#pragma once
#include <string>

#include "attn/image/image.h"

namespace attn::image {

// [3, height, width]: the file at `path` resized to width x height (aspect ratio
// not kept: a captioner sees every image as the same square) and normalised.
// Throws std::runtime_error naming the path when the file cannot be read.
Tensor load_input(const std::string& path, int width, int height, const Normalization& norm = {});

// The same for a picture already decoded (an upload: codec.h's decode_image).
Tensor picture_input(const Image& img, int width, int height, const Normalization& norm = {});

}  // namespace attn::image
