// attn._blas(): the BLAS attn opened (cpu/blas.h), as `attn --version` reports it.
// A NumPy imported before attn has initialised the same OpenBLAS (Debian's
// libblas.so.3 is a link to it) with its own core choice before attn could set
// OPENBLAS_CORETYPE; attn/__init__.py reads this to warn when the core differs.
#include "attn/cpu/blas.h"
#include "attn/cpu/isa.h"
#include "bindings.h"

namespace attn::python {

void add_blas(py::module_& m) {
  m.def(
      "_blas",
      [] {
        const cpu::BlasInfo& b = cpu::blas_info();  // opens it now, when not yet open
        py::dict d;
        d["path"] = b.path;
        d["config"] = b.config;
        d["core"] = b.core;
        d["threading"] = b.threading;
        d["wanted_core"] = cpu::blas_core_for(cpu::isa());
        return d;
      },
      "The BLAS attn runs its large products on (opened by this call if not yet): path, config, core, "
      "threading, and wanted_core, the core attn asks OpenBLAS for.");
}

}  // namespace attn::python
