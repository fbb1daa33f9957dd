// JPEG through libjpeg(-turbo). libjpeg reports a fatal error by calling
// error_exit, which must not return; it longjmps back to decode_jpeg's one
// setjmp. Only libjpeg's C frames lie between the two, and everything that
// lives across the jump is in a heap block reached through a pointer
// (JpegState), so no C++ destructor is skipped and no value is left
// indeterminate. Warnings (corrupt data, a premature end) are errors too:
// libjpeg would go on and return a partly grey picture.
#include <cstddef>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>

#include <csetjmp>
#include <cstdint>
#include <vector>
#include <memory>
#include <stdexcept>

#include "attn/image/codec.h"

namespace attn::image {
namespace {

struct JpegState {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};  // counts the scans (kMaxJpegScans)
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {0};
  bool created = false;
  Image image;               // the decoded picture, filled row by row
  std::vector<JSAMPLE> row;  // [width * components] one scanline as libjpeg returns it
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* state = reinterpret_cast<JpegState*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, state->message);
  std::longjmp(state->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);  // a warning: the data is corrupt or cut short
}

// Called by libjpeg as it reads: a progressive file's scan count is refused
// past kMaxJpegScans the moment it is reached, not after minutes of rereading.
void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number <= kMaxJpegScans) return;
  auto* state = reinterpret_cast<JpegState*>(cinfo->client_data);
  std::snprintf(state->message, sizeof state->message, "more than %d scans (a progressive file's limit)", kMaxJpegScans);
  std::longjmp(state->jump, 1);
}

// CMYK as libjpeg hands it over to RGB. An Adobe marker means inverted values
// (Photoshop's convention: 0 = full ink), as in every CMYK JPEG seen in practice.
void cmyk_to_rgb(const uint8_t* cmyk, float* rgb, int n, bool inverted) {
  for (int i = 0; i < n; ++i, cmyk += 4, rgb += 3) {
    const float k = inverted ? cmyk[3] / 255.0f : 1.0f - cmyk[3] / 255.0f;
    for (int c = 0; c < 3; ++c) {
      const float ink_left = inverted ? cmyk[c] / 255.0f : 1.0f - cmyk[c] / 255.0f;
      rgb[c] = ink_left * k;
    }
  }
}

}  // namespace

Image decode_jpeg(const std::string& bytes, const std::string& name, long long max_pixels) {
  auto state = std::make_unique<JpegState>();
  jpeg_decompress_struct& cinfo = state->cinfo;
  cinfo.err = jpeg_std_error(&state->err);
  state->err.error_exit = on_error;
  state->err.emit_message = on_message;
  state->progress.progress_monitor = on_progress;
  cinfo.client_data = state.get();
  if (setjmp(state->jump)) {
    if (state->created) jpeg_destroy_decompress(&state->cinfo);
    throw std::runtime_error(name + ": JPEG: " + state->message);
  }
  jpeg_create_decompress(&cinfo);
  state->created = true;
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), (unsigned long)bytes.size());
  jpeg_read_header(&cinfo, TRUE);
  cinfo.progress = &state->progress;
  // checked on the header, before jpeg_start_decompress allocates a progressive file's
  // whole coefficient buffer (2 bytes per sample) and reads every scan into it
  const long long width = cinfo.image_width, height = cinfo.image_height;
  if (width * height > max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    throw ImageSizeError(name + ": JPEG: unsupported size " + std::to_string(width) + " x " +
                             std::to_string(height) + " (at most " + std::to_string(max_pixels) + " pixels)");
  }
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;  // libjpeg turns grey and YCbCr into RGB itself
  jpeg_start_decompress(&cinfo);  // output size = the header's (no scaling asked)
  state->image = Image(int(width), int(height));
  state->row.resize(size_t(width) * size_t(cinfo.output_components));
  while (cinfo.output_scanline < cinfo.output_height) {
    const size_t y = cinfo.output_scanline;
    JSAMPROW rows[1] = {state->row.data()};
    jpeg_read_scanlines(&cinfo, rows, 1);
    float* out = state->image.rgb.data() + y * size_t(width) * 3;
    if (cmyk)
      cmyk_to_rgb(state->row.data(), out, int(width), cinfo.saw_Adobe_marker);
    else
      for (size_t i = 0; i < size_t(width) * 3; ++i) out[i] = state->row[i] / 255.0f;
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return std::move(state->image);
}

}  // namespace attn::image
