// attn.Translator: a run directory loaded once (decode/model_dir.h), then
// translate() = decode::translate_lines, the function behind `attn translate`,
// and explain() = decode::explain_text, behind `attn explain --format json`.
// Both release the GIL while C++ works: the model is read-only once loaded, so
// Python threads may call one Translator concurrently; each call uses its own
// search state, and the decoder weights prepared per beam size are shared.
#include <pybind11/stl.h>

#include <map>
#include <mutex>

#include "arrays.h"
#include "attn/cpu/threading.h"
#include "attn/decode/compute_type.h"
#include "attn/decode/explain.h"
#include "attn/decode/model_dir.h"
#include "attn/decode/translator.h"
#include "bindings.h"

namespace attn::python {

namespace {

// One sentence's n-best, as CTranslate2's TranslationResult.
struct TranslationResult {
  std::vector<std::string> hypotheses;               // [n_best] detokenised, best first
  std::vector<double> scores;                        // [n_best] log p / length^length_penalty
  std::vector<double> log_probs;                     // [n_best]
  std::vector<std::vector<std::string>> tgt_pieces;  // [n_best][T] without EOS
  std::vector<bool> finished;                        // [n_best] ended with EOS (else cut at the length limit)
  std::vector<std::string> src_pieces;               // [S] the pieces the model read
  py::list attention;  // [n_best] arrays [T (+1 for EOS when finished), S]; empty without alignments
};

class Translator {
public:
  Translator(const std::string& run_dir, const std::string& compute, int threads, const std::string& weights)
      : threads_(threads) {
    if (threads < 0) throw std::invalid_argument("Translator: threads = " + std::to_string(threads) + " (0: all cores)");
    set_num_threads(threads_);
    tm_ = decode::load_translation_model(run_dir, weights);
    compute_ = decode::compute_type(compute, *tm_.model);
  }

  std::vector<TranslationResult> translate(const std::vector<std::string>& lines, int beam, int n_best,
                                           bool alignments, double length_penalty, double max_len_ratio,
                                           int64_t batch, int64_t max_src_pieces, const std::string& attention_map) {
    if (batch < 1) throw std::invalid_argument("translate: batch = " + std::to_string(batch) + " (at least 1)");
    decode::TranslateOptions o;
    o.search.beam = beam;
    o.search.nbest = n_best;
    o.search.alignments = alignments;
    o.search.length_penalty = length_penalty;
    o.search.max_len_ratio = max_len_ratio;
    o.search.attention_map = attention_map;
    o.search.compute = compute_;
    o.batch_sentences = batch;
    o.max_src_tokens = max_src_pieces;
    std::vector<decode::Translation> tr;
    {
      py::gil_scoped_release nogil;
      set_num_threads(threads_);  // OpenMP's thread count is the calling thread's
      // beam < 1: translate_lines refuses it with its own message (preparing 0 rows would not)
      if (beam >= 1) o.search.prepared = prepared(batch * beam);
      tr = decode::translate_lines(*tm_.model, *tm_.src_vocab, *tm_.tgt_vocab, lines, o);
    }
    std::vector<TranslationResult> out(tr.size());
    for (size_t i = 0; i < tr.size(); ++i) {
      out[i].src_pieces = tr[i].src_pieces;
      const auto S = py::ssize_t(tr[i].src_pieces.size());
      for (decode::TranslatedHypothesis& h : tr[i].hypotheses) {
        out[i].hypotheses.push_back(h.text);
        out[i].scores.push_back(h.score);
        out[i].log_probs.push_back(h.log_prob);
        out[i].tgt_pieces.push_back(h.pieces);
        out[i].finished.push_back(h.finished);
        if (alignments) {
          const auto T = py::ssize_t(h.attention.size()) / (S > 0 ? S : 1);
          out[i].attention.append(vector_array(std::move(h.attention), {T, S}));
        }
      }
    }
    return out;
  }

  py::object explain(const std::string& text, const decode::ExplainOptions& options) {
    decode::ExplainOptions o = options;
    o.compute = compute_;
    std::string json;
    {
      py::gil_scoped_release nogil;
      set_num_threads(threads_);
      json = decode::explain_text(tm_, text, o).dump();
    }
    return py::module_::import("json").attr("loads")(json);
  }

  std::vector<std::string> attention_maps() const { return tm_.model->attention_maps(); }
  std::string model_type() const { return tm_.model->config().type; }

private:
  // The decoder weights prepared for `rows` search rows (batch x beam), once
  // per size: `attn translate` prepares them once for all its chunks too.
  std::shared_ptr<const models::PreparedDecoder> prepared(int64_t rows) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& p = prepared_[rows];
    if (!p) p = tm_.model->prepare_decoder(rows, compute_);
    return p;
  }

  int threads_;
  decode::TranslationModel tm_;
  nn::StepWeightType compute_ = nn::StepWeightType::F32;
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<const models::PreparedDecoder>> prepared_;
};

constexpr const char* kTranslatorDoc = R"(A trained translation run loaded for decoding (`attn translate -m RUN_DIR`).

run_dir: a directory written by `attn train` (model.safetensors, its config,
vocab.src.model, vocab.tgt.model); weights: another weights file (e.g.
RUN_DIR/checkpoint/model.safetensors). compute: fp32, int8, bf16 or auto, the
element type of the search's products (`attn translate --compute`). threads:
OpenMP / OpenBLAS threads per call (0: all cores).
RuntimeError names a missing or mismatched file; ValueError a bad option.)";

constexpr const char* kTranslateDoc = R"(Translates raw sentences, as `attn translate` (length-sorted batches, beam search).

lines: [N] sentences. Returns [N] TranslationResult, in order; an empty line
gives a result without hypotheses. beam 1 is greedy search; n_best <= beam
hypotheses per sentence, best first. alignments=True fills each result's
`attention`: per hypothesis a float32 array [T, S], T its target pieces (+1 for
EOS when finished), S the source pieces, rows summing to 1 (the model's map,
or attention_map by name). A line of more than max_src_pieces pieces is
translated from its first max_src_pieces (0: no limit). The GIL is released
while decoding.)";

constexpr const char* kExplainDoc = R"(One sentence's decoding step by step, the object `attn explain --format json` prints.

Returns a dict: "src_tokens" [S], "steps" [T] (each with "weights" [S],
"scores", "top_k", "chosen", ...), "translation", "attention_map" (see
docs/explain-and-figures.md). beam 1 explains greedy search, else the beam's
best hypothesis; words=True merges SentencePiece pieces into words.
ValueError for an empty or invalid text or bad options.)";

}  // namespace

void add_translator(py::module_& m) {
  py::class_<TranslationResult>(m, "TranslationResult", "One sentence's translations (Translator.translate)")
      .def_readonly("hypotheses", &TranslationResult::hypotheses, "[n_best] detokenised translations, best first")
      .def_readonly("scores", &TranslationResult::scores, "[n_best] log p / length^length_penalty")
      .def_readonly("log_probs", &TranslationResult::log_probs, "[n_best] log-probabilities (EOS included)")
      .def_readonly("tgt_pieces", &TranslationResult::tgt_pieces, "[n_best][T] target pieces, without EOS")
      .def_readonly("finished", &TranslationResult::finished, "[n_best] ended with EOS (else cut at the length limit)")
      .def_readonly("src_pieces", &TranslationResult::src_pieces, "[S] the source pieces the model read")
      .def_readonly("attention", &TranslationResult::attention,
                    "[n_best] float32 arrays [T (+1 for EOS), S] (alignments=True), else []")
      .def("__repr__", [](const TranslationResult& r) {
        return "<attn.TranslationResult " + (r.hypotheses.empty() ? std::string("(empty)") : "'" + r.hypotheses[0] + "'") + ">";
      });
  py::class_<Translator>(m, "Translator", kTranslatorDoc)
      .def(py::init<const std::string&, const std::string&, int, const std::string&>(), py::arg("run_dir"),
           py::kw_only(), py::arg("compute") = "fp32", py::arg("threads") = 0, py::arg("weights") = "")
      .def("translate", &Translator::translate, kTranslateDoc, py::arg("lines"), py::kw_only(), py::arg("beam") = 5,
           py::arg("n_best") = 1, py::arg("alignments") = false, py::arg("length_penalty") = 1.0,
           py::arg("max_len_ratio") = 2.0, py::arg("batch") = 64, py::arg("max_src_pieces") = 250,
           py::arg("attention_map") = "")
      .def(
          "explain",
          [](Translator& t, const std::string& text, int beam, int top_k, bool words, double max_len_ratio,
             const std::string& attention_map, const std::string& self_attention_map) {
            decode::ExplainOptions o;
            o.beam = beam;
            o.top_k = top_k;
            o.words = words;
            o.max_len_ratio = max_len_ratio;
            o.attention_map = attention_map;
            o.self_attention_map = self_attention_map;
            return t.explain(text, o);
          },
          kExplainDoc, py::arg("text"), py::kw_only(), py::arg("beam") = 1, py::arg("top_k") = 5,
          py::arg("words") = false, py::arg("max_len_ratio") = 2.0, py::arg("attention_map") = "",
          py::arg("self_attention_map") = "")
      .def_property_readonly("attention_maps", &Translator::attention_maps, "the model's attention maps by name")
      .def_property_readonly("model_type", &Translator::model_type, "rnnsearch, luong, transformer, ...");
}

}  // namespace attn::python
