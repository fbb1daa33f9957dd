// The compiled half of the Python package `attn` (python/attn/__init__.py
// re-exports it): a thin layer over libattn, docs/python.md.
#include "bindings.h"

PYBIND11_MODULE(_attn, m) {
  m.doc() = "attn's C++ core: attention functions on NumPy arrays, translation, metrics, training, captioning";
  attn::python::add_attention_functions(m);
  attn::python::add_metrics(m);
  attn::python::add_translator(m);
  attn::python::add_train(m);
  attn::python::add_captioner(m);
  attn::python::add_blas(m);
}
