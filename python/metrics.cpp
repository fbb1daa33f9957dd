// attn.bleu and attn.chrf: `attn score`'s corpus BLEU (sacreBLEU 13a) and chrF
// (eval/bleu.h, eval/chrf.h) on Python lists of detokenised strings.
#include <pybind11/stl.h>

#include "attn/eval/bleu.h"
#include "attn/eval/chrf.h"
#include "bindings.h"

namespace attn::python {

namespace {

using Streams = std::vector<std::vector<std::string>>;

// refs: one reference stream (a list of str, one per hypothesis) or several (a
// list of such lists), as sacreBLEU's corpus_score takes [refs1, refs2, ...].
Streams reference_streams(const py::handle& refs, const char* fn) {
  if (py::isinstance<py::str>(refs)) throw py::type_error(std::string(fn) + ": refs must be a list of str, not a str");
  const py::sequence seq = py::reinterpret_borrow<py::sequence>(refs);
  if (seq.size() > 0 && !py::isinstance<py::str>(seq[0])) return refs.cast<Streams>();
  return {refs.cast<std::vector<std::string>>()};
}

constexpr const char* kBleuDoc = R"(Corpus BLEU as `attn score` (sacreBLEU's 13a tokenizer, exp smoothing).

hyps: [N] detokenised hypotheses; refs: [N] references, or a list of reference
streams [[N], [N], ...]. Returns a BleuScore (float(s) is the score in [0, 100];
str(s) sacreBLEU's line). ValueError when a stream's length differs from hyps'
or a text is not UTF-8.)";

constexpr const char* kChrfDoc = R"(Corpus chrF as `attn score` (character 6-grams, beta 2;
word_order=2 gives chrF++).

hyps: [N] detokenised hypotheses; refs: [N] references, or a list of reference
streams. Returns a ChrfScore (float(s) is the score in [0, 100]).)";

}  // namespace

void add_metrics(py::module_& m) {
  py::class_<eval::BleuScore>(m, "BleuScore", "Corpus BLEU (eval/bleu.h)")
      .def_readonly("score", &eval::BleuScore::score, "BLEU in [0, 100]")
      .def_readonly("counts", &eval::BleuScore::counts, "[4] matches per n-gram order")
      .def_readonly("totals", &eval::BleuScore::totals, "[4] hypothesis n-grams per order")
      .def_readonly("precisions", &eval::BleuScore::precisions, "[4] precisions in percent")
      .def_readonly("bp", &eval::BleuScore::bp, "brevity penalty")
      .def_readonly("sys_len", &eval::BleuScore::sys_len)
      .def_readonly("ref_len", &eval::BleuScore::ref_len)
      .def_property_readonly("signature", [](const eval::BleuScore& s) { return eval::bleu_signature({}, s.num_refs); })
      .def("__float__", [](const eval::BleuScore& s) { return s.score; })
      .def("__str__", &eval::BleuScore::format)
      .def("__repr__", [](const eval::BleuScore& s) { return "<attn.BleuScore " + s.format() + ">"; });
  py::class_<eval::ChrfScore>(m, "ChrfScore", "Corpus chrF (eval/chrf.h)")
      .def_readonly("score", &eval::ChrfScore::score, "chrF in [0, 100]")
      .def_readonly("beta", &eval::ChrfScore::beta)
      .def_readonly("word_order", &eval::ChrfScore::word_order)
      .def_property_readonly("signature", [](const eval::ChrfScore& s) {
        eval::ChrfOptions o;
        o.word_order = s.word_order;
        return eval::chrf_signature(o, s.num_refs);
      })
      .def("__float__", [](const eval::ChrfScore& s) { return s.score; })
      .def("__str__", &eval::ChrfScore::format)
      .def("__repr__", [](const eval::ChrfScore& s) { return "<attn.ChrfScore " + s.format() + ">"; });
  m.def(
      "bleu",
      [](const std::vector<std::string>& hyps, const py::object& refs) {
        const Streams streams = reference_streams(refs, "bleu");
        py::gil_scoped_release nogil;
        return eval::corpus_bleu(hyps, streams);
      },
      kBleuDoc, py::arg("hyps"), py::arg("refs"));
  m.def(
      "chrf",
      [](const std::vector<std::string>& hyps, const py::object& refs, int word_order) {
        const Streams streams = reference_streams(refs, "chrf");
        eval::ChrfOptions o;
        o.word_order = word_order;
        py::gil_scoped_release nogil;
        return eval::corpus_chrf(hyps, streams, o);
      },
      kChrfDoc, py::arg("hyps"), py::arg("refs"), py::kw_only(), py::arg("word_order") = 0);
}

}  // namespace attn::python
