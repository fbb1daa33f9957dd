// Writes the binary seeds of fuzz/corpus: for the safetensors target a model
// file of the tiny model (tiny_model.h) and a checkpoint of it, its three
// files joined by the target's separator; for the vocab target two tiny
// SentencePiece models (unigram, bpe) trained by SubwordVocab::train, what
// `attn vocab` runs, on a few lines, with the "identity" normalization: the
// default nmt_nfkc rule table alone is 237 KB, too big a seed to mutate fast.
// For the image target: small PNGs (RGB, grey + alpha, RGBA, 16-bit grey) by libpng and JPEGs (baseline, progressive, grey, Adobe CMYK) by
// libjpeg, of the same 12 x 9 picture.
// Usage: fuzz_make_seeds CORPUS_DIR   (CORPUS_DIR: fuzz/corpus)
#include <cstdio>  // (before jpeglib.h, which needs FILE and size_t)
#include <jpeglib.h>
#include <png.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attn/data/vocab.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/random.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optim.h"
#include "tiny_model.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error(path + ": write failed");
}

// The seeds' picture: 12 x 9, a colour gradient with a dark square, as 8-bit samples [9, 12, 4] RGBA.
std::vector<uint8_t> seed_rgba() {
  std::vector<uint8_t> px;
  for (int y = 0; y < 9; ++y)
    for (int x = 0; x < 12; ++x) {
      const bool square = x >= 3 && x < 7 && y >= 2 && y < 6;
      px.insert(px.end(), {uint8_t(square ? 20 : 20 * x), uint8_t(square ? 30 : 28 * y), uint8_t(square ? 90 : 200),
                           uint8_t(x < 2 ? 0 : 255)});
    }
  return px;
}

std::string png_bytes(uint32_t format, const std::vector<uint8_t>& rgba) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = 12;
  png.height = 9;
  png.format = format;
  // the RGBA samples as `format` holds them: grey (the green channel), alpha dropped or kept, 16 bits
  std::vector<uint8_t> converted;
  const size_t channels = PNG_IMAGE_SAMPLE_CHANNELS(format), sample = PNG_IMAGE_SAMPLE_COMPONENT_SIZE(format);
  converted.resize(12 * 9 * channels * sample);
  for (size_t p = 0; p < 12 * 9; ++p)
    for (size_t c = 0; c < channels; ++c) {
      const bool alpha = (format & PNG_FORMAT_FLAG_ALPHA) && c == channels - 1;
      const uint8_t v = alpha ? rgba[p * 4 + 3] : (format & PNG_FORMAT_FLAG_COLOR) ? rgba[p * 4 + c] : rgba[p * 4 + 1];
      if (sample == 2) {
        const uint16_t w = uint16_t(v * 257);
        std::memcpy(&converted[(p * channels + c) * 2], &w, 2);
      } else {
        converted[p * channels + c] = v;
      }
    }
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, converted.data(), 0, nullptr))
    throw std::runtime_error(std::string("png: ") + png.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, converted.data(), 0, nullptr))
    throw std::runtime_error(std::string("png: ") + png.message);
  out.resize(size);
  return out;
}

// A JPEG of the picture in `space` (JCS_RGB, JCS_GRAYSCALE, JCS_CMYK), progressive or baseline.
std::string jpeg_bytes(const std::vector<uint8_t>& rgba, J_COLOR_SPACE space, bool progressive) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = 12;
  c.image_height = 9;
  c.input_components = space == JCS_GRAYSCALE ? 1 : space == JCS_CMYK ? 4 : 3;
  c.in_color_space = space;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 80, TRUE);
  if (progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(12 * size_t(c.input_components));
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 12; ++x)
      for (int k = 0; k < c.input_components; ++k) {
        const uint8_t* p = &rgba[(size_t(y) * 12 + size_t(x)) * 4];
        // CMYK as Photoshop writes it (inverted: 0 = full ink), the Adobe marker libjpeg adds says so
        row[size_t(x * c.input_components + k)] = space == JCS_GRAYSCALE ? p[1] : space == JCS_CMYK ? uint8_t(k < 3 ? p[k] : 255) : p[k];
      }
    JSAMPROW r[1] = {row.data()};
    jpeg_write_scanlines(&c, r, 1);
  }
  jpeg_finish_compress(&c);
  std::string out(reinterpret_cast<const char*>(mem), size);
  jpeg_destroy_compress(&c);
  std::free(mem);
  return out;
}

void write_image_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::vector<uint8_t> px = seed_rgba();
  write_file(dir + "/rgb.png", png_bytes(PNG_FORMAT_RGB, px));
  write_file(dir + "/grey-alpha.png", png_bytes(PNG_FORMAT_GA, px));
  write_file(dir + "/rgba.png", png_bytes(PNG_FORMAT_RGBA, px));
  write_file(dir + "/grey16.png", png_bytes(PNG_FORMAT_LINEAR_Y, px));
  write_file(dir + "/baseline.jpg", jpeg_bytes(px, JCS_RGB, false));
  write_file(dir + "/progressive.jpg", jpeg_bytes(px, JCS_RGB, true));
  write_file(dir + "/grey.jpg", jpeg_bytes(px, JCS_GRAYSCALE, false));
  write_file(dir + "/cmyk.jpg", jpeg_bytes(px, JCS_CMYK, false));
}

void write_vocab_seeds(const std::string& dir, const std::string& scratch) {
  using namespace attn::data;
  const std::vector<std::string> lines = {"A man rides a horse.", "Two dogs play in the snow.",
                                          "Un homme monte à cheval.", "Deux chiens jouent dans la neige.",
                                          "Ça va? Très bien, merci.", "東京は大きい。"};
  for (SubwordModel model : {SubwordModel::kUnigram, SubwordModel::kBpe}) {
    VocabTrainOptions o;
    o.model = model;
    o.vocab_size = 52;
    o.normalization = "identity";
    const std::string name = model == SubwordModel::kBpe ? "bpe.model" : "unigram.model";
    SubwordVocab::train({&lines}, scratch + "/" + name, o);
    write_file(dir + "/" + name, read_file(scratch + "/" + name));
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attn;
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  const std::string out = std::string(argv[1]) + "/safetensors";
  const std::string scratch = std::filesystem::temp_directory_path() / "attn-make-seeds";
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  const models::ModelConfig config = fuzz::tiny_config();
  Rng init(1);
  auto model = models::make_model(config, init, 2);
  train::save_model(scratch + "/model.safetensors", *model, models::to_json(config));
  write_file(out + "/model.safetensors", read_file(scratch + "/model.safetensors"));

  train::Adam adam(model->named_parameters());
  train::CheckpointSave what;
  what.model = model.get();
  what.config_json = models::to_json(config);
  what.optimizer = &adam;
  what.trainer.step = 3;
  train::save_checkpoint(scratch + "/ckpt", what);
  const std::string sep = "\n@@file@@\n";
  write_file(out + "/checkpoint", read_file(scratch + "/ckpt/model.safetensors") + sep +
                                      read_file(scratch + "/ckpt/trainer_state.json") + sep +
                                      read_file(scratch + "/ckpt/optimizer.safetensors"));
  write_vocab_seeds(std::string(argv[1]) + "/vocab", scratch);
  write_image_seeds(std::string(argv[1]) + "/image");
  std::filesystem::remove_all(scratch);
  return 0;
}
