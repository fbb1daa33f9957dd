// Where the figures go: the format a file name asks for, cairo surfaces
// rendered to bytes, and files replaced atomically. Internal to viz/ and scenes/.
#pragma once
#include <cairo.h>

#include <functional>
#include <string>
#include <vector>

namespace attn::viz {

enum class Format { Png, Svg, Pdf, Html };

// The format of `path` by its extension (case-insensitive), one of `allowed`;
// throws std::invalid_argument naming the path and the accepted extensions.
Format format_of(const std::string& path, const std::vector<Format>& allowed);

// ".png", ...
std::string extension(Format f);

// The longest side of a cairo image surface, pixels (cairo's own limit).
constexpr int kCairoMaxSide = 32767;

// Draws a width x height figure (pixels for PNG, points for PDF and SVG) with
// `draw` on a white page and returns the file's bytes. Format must be Png, Svg or Pdf.
// A PNG over kCairoMaxSide a side throws std::invalid_argument saying so.
std::string render_cairo(Format f, double width, double height, const std::function<void(cairo_t*)>& draw);

// An RGB picture, rgb [height, width, 3] row-major, channel fastest, values in
// [0, 1] (clamped), as a cairo RGB24 image surface (the caller destroys it):
// how images get into figures (the contact sheets, the attention overlays).
// Throws std::runtime_error when a side is over kCairoMaxSide (draw_rgb does not).
cairo_surface_t* rgb_surface(const float* rgb, int width, int height);

// Paints that picture with its top-left corner at (x, y), enlarged by `scale`:
// whole-number enlargements show the pixels as they are (NEAREST), anything
// else is smoothed (GOOD). A picture with a side over kCairoMaxSide is drawn
// from every k-th pixel (the smallest k that fits), at the same size.
void draw_rgb(cairo_t* cr, const float* rgb, int width, int height, double x, double y, double scale);

// Replaces `path` with `bytes`: written to a temporary file beside it, then
// renamed into place, so a reader never sees half a figure (a `path` that is
// not a regular file, e.g. /dev/stdout, is written in place). Throws
// std::runtime_error "<path>: write failed: <reason>" and leaves no temporary file.
void write_replacing(const std::string& path, const std::string& bytes);

// Text safe inside XML/HTML elements and double-quoted attributes: & < > " '.
std::string xml_escape(const std::string& s);

}  // namespace attn::viz
