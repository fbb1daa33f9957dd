// The parts of the module `attn` (module.cpp), one file each.
#pragma once
#include <pybind11/pybind11.h>

namespace attn::python {

namespace py = pybind11;

void add_attention_functions(py::module_& m);  // attention_functions.cpp
void add_metrics(py::module_& m);              // metrics.cpp
void add_translator(py::module_& m);           // translator.cpp
void add_train(py::module_& m);                // train.cpp
void add_captioner(py::module_& m);            // captioner.cpp
void add_blas(py::module_& m);                 // blas.cpp

}  // namespace attn::python
