// attn.Captioner: an image-model run (show_attend_tell) loaded once, and
// caption() = decode::caption_pixels, the search behind `attn caption -m RUN
// IMAGE`, on image files or on pictures already in memory (NumPy
// [H, W, 3] arrays), with each word's attention over the grid. The GIL is
// released while C++ works.
#include <pybind11/stl.h>

#include "arrays.h"
#include "attn/cpu/threading.h"
#include "attn/decode/captioner.h"
#include "attn/decode/compute_type.h"
#include "attn/decode/model_dir.h"
#include "bindings.h"

namespace attn::python {

namespace {

struct CaptionResult {
  std::string caption;             // detokenised
  std::vector<std::string> words;  // [T]
  py::object attention;            // [T, Gh, Gw] float32: word t's weights over the grid (mean of its pieces')
  double log_prob = 0;
  bool finished = false;           // ended with EOS (else cut at max_words)
};

// A picture [H, W, 3] as image::Image: uint8 (0..255) or float32 in [0, 1].
image::Image picture_of(const py::array& a) {
  if (a.ndim() != 3 || a.shape(2) != 3)
    throw py::value_error("Captioner.caption: an image array must be [H, W, 3] (RGB), got ndim " +
                          std::to_string(a.ndim()));
  const bool u8 = a.dtype().is(py::dtype::of<uint8_t>());
  if (!u8 && !a.dtype().is(py::dtype::of<float>()))
    throw py::type_error("Captioner.caption: an image array must be uint8 (0..255) or float32 (0..1), not " +
                         std::string(py::str(a.dtype())));
  if (!(a.flags() & py::array::c_style)) throw py::value_error("Captioner.caption: the image array must be C-contiguous");
  image::Image img(int(a.shape(1)), int(a.shape(0)));
  const size_t n = img.rgb.size();
  if (u8) {
    const auto* p = static_cast<const uint8_t*>(a.data());
    for (size_t i = 0; i < n; ++i) img.rgb[i] = float(p[i]) / 255.0f;
  } else {
    const auto* p = static_cast<const float*>(a.data());
    for (size_t i = 0; i < n; ++i) {
      if (!(p[i] >= 0.0f && p[i] <= 1.0f))
        throw py::value_error("Captioner.caption: a float32 image's values must be in [0, 1]; element " +
                              std::to_string(i) + " is " + std::to_string(p[i]));
      img.rgb[i] = p[i];
    }
  }
  return img;
}

class Captioner {
public:
  Captioner(const std::string& run_dir, const std::string& compute, int threads, const std::string& weights)
      : threads_(threads) {
    if (threads < 0) throw std::invalid_argument("Captioner: threads = " + std::to_string(threads) + " (0: all cores)");
    set_num_threads(threads_);
    tm_ = decode::load_model_dir(run_dir, weights);
    in_ = decode::image_input_of(tm_.model->config(), run_dir);
    compute_ = decode::compute_type(compute, *tm_.model);
  }

  // image: a path or an array; a list of them captions them as one batch.
  py::object caption(const py::object& image, int beam, int max_words, const std::string& attention_map) {
    const bool many = py::isinstance<py::list>(image) || py::isinstance<py::tuple>(image);
    std::vector<py::object> items;
    if (many) {
      for (const py::handle& h : image) items.push_back(py::reinterpret_borrow<py::object>(h));
      if (items.empty()) throw py::value_error("Captioner.caption: an empty list of images");
    } else {
      items.push_back(image);
    }
    std::vector<image::Image> pictures;  // arrays, decoded under the GIL
    std::vector<std::string> paths;
    for (const py::object& it : items) {
      if (py::isinstance<py::array>(it))
        pictures.push_back(picture_of(it.cast<py::array>()));
      else if (py::isinstance<py::str>(it) || py::hasattr(it, "__fspath__"))
        paths.push_back(py::str(py::module_::import("os").attr("fspath")(it)));
      else
        throw py::type_error("Captioner.caption: an image is a path (str) or a numpy array [H, W, 3]");
    }
    if (!pictures.empty() && !paths.empty())
      throw py::value_error("Captioner.caption: give paths or arrays, not both in one list");
    decode::CaptionOptions o;
    o.beam = beam;
    o.max_words = max_words;
    o.attention_map = attention_map;
    o.compute = compute_;
    std::vector<decode::PieceCaption> caps;
    {
      py::gil_scoped_release nogil;
      set_num_threads(threads_);
      caps = decode::caption_pixels(*tm_.model, pixels(pictures, paths), in_, o);
    }
    py::list out;
    for (const decode::PieceCaption& c : caps) out.append(result(c));
    return many ? py::object(out) : out[0];
  }

private:
  // pixels [B, 3, H, W] at the model's size: the files, or the pictures one by one.
  Tensor pixels(const std::vector<image::Image>& pictures, const std::vector<std::string>& paths) const {
    if (!paths.empty()) return decode::image_batch(paths, in_);
    std::vector<Tensor> rows;
    for (const image::Image& p : pictures) rows.push_back(decode::picture_batch(p, in_));
    Tensor batch = Tensor::empty({int64_t(rows.size()), 3, in_.height, in_.width});
    const int64_t per = rows[0].numel();
    for (size_t i = 0; i < rows.size(); ++i) std::copy_n(rows[i].data(), per, batch.data() + int64_t(i) * per);
    return batch;
  }

  py::object result(const decode::PieceCaption& c) const {
    CaptionResult r;
    r.caption = tm_.tgt_vocab->decode(c.tokens);
    r.log_prob = c.log_prob;
    r.finished = c.finished;
    std::vector<std::string> pieces;
    for (int id : c.tokens) pieces.push_back(tm_.tgt_vocab->piece(id));
    const decode::WordCaption w = decode::merge_pieces(pieces, c.attention, in_.grid_h * in_.grid_w);
    r.words = w.words;
    r.attention = vector_array(w.attention, {py::ssize_t(w.words.size()), in_.grid_h, in_.grid_w});
    return py::cast(std::move(r));
  }

  int threads_;
  decode::TranslationModel tm_;
  decode::ImageModelInput in_;
  nn::StepWeightType compute_ = nn::StepWeightType::F32;
};

constexpr const char* kCaptionerDoc = R"(A trained image-captioning run (show_attend_tell) loaded for captioning (`attn caption -m RUN_DIR`).

compute: fp32, int8, bf16 or auto; threads: per call (0: all cores). ValueError
for a run of a text model, naming its type.)";

constexpr const char* kCaptionDoc = R"(Captions an image, as `attn caption -m RUN IMAGE`.

image: a path, or a numpy array [H, W, 3] RGB (uint8 0..255 or float32 0..1),
resized to the model's input as a file would be; a list of them is captioned
as one batch (a list of results). Returns a CaptionResult: caption, words [T],
attention [T, Gh, Gw] (each word's weights over the image grid), log_prob,
finished.)";

}  // namespace

void add_captioner(py::module_& m) {
  py::class_<CaptionResult>(m, "CaptionResult", "One image's caption (Captioner.caption)")
      .def_readonly("caption", &CaptionResult::caption)
      .def_readonly("words", &CaptionResult::words, "[T] the caption's words")
      .def_readonly("attention", &CaptionResult::attention, "float32 [T, Gh, Gw]: each word's weights over the grid")
      .def_readonly("log_prob", &CaptionResult::log_prob)
      .def_readonly("finished", &CaptionResult::finished)
      .def("__repr__", [](const CaptionResult& r) { return "<attn.CaptionResult '" + r.caption + "'>"; });
  py::class_<Captioner>(m, "Captioner", kCaptionerDoc)
      .def(py::init<const std::string&, const std::string&, int, const std::string&>(), py::arg("run_dir"),
           py::kw_only(), py::arg("compute") = "fp32", py::arg("threads") = 0, py::arg("weights") = "")
      .def("caption", &Captioner::caption, kCaptionDoc, py::arg("image"), py::kw_only(), py::arg("beam") = 1,
           py::arg("max_words") = 40, py::arg("attention_map") = "");
}

}  // namespace attn::python
