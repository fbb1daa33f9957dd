// What a launcher tells its processes through the environment, read without MPI.
#pragma once
#include <cstdlib>
#include <initializer_list>

namespace attn::dist {

// The job's number of processes: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE,
// PMIx launchers PMIX_SIZE, MPICH / Slurm's PMI PMI_SIZE; 0 when none is set.
inline int launched_ranks_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

}  // namespace attn::dist
