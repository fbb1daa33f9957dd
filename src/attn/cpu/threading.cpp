#include "attn/cpu/threading.h"

#include <omp.h>

#include "attn/cpu/blas.h"

namespace attn {

void set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_num_threads(n);
  cpu::blas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace attn
