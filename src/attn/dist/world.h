// The processes of an `mpirun` launch, for the command (cli/cmd_train.cpp):
// joining the job, its ranks as the trainer's Collective (train/collective.h)
// and ending the whole job on an error. Built with MPI (mpi_world.cpp) or
// without (no_mpi_world.cpp: one process, and an mpirun launch refused by
// name); docs/distributed-training.md.
#pragma once
#include <memory>
#include <string>

#include "attn/train/collective.h"

namespace attn::dist {

class World {
public:
  virtual ~World() = default;  // leaves the job (MPI_Finalize): every rank must get here
  virtual train::Collective& ranks() = 0;
  // Prints "attn train: rank R: <message>" to stderr and ends every rank of
  // the job with exit status `code` (MPI_Abort): for an error on one rank,
  // which the others would otherwise wait for until their deadline.
  [[noreturn]] virtual void abort(const std::string& message, int code) = 0;
};

// Joins the job when a launcher (mpirun) started this process; null when it
// runs on its own. timeout_s bounds every wait of the trainer's collective
// operations (train.dist_timeout_s). Throws std::runtime_error when this
// build has no MPI and the launcher started more than one process.
std::unique_ptr<World> join_world(double timeout_s);

// The number of processes the launcher started, from its environment
// (OMPI_COMM_WORLD_SIZE, PMIX_SIZE or PMI_SIZE); 0 when none did.
int launched_ranks();

}  // namespace attn::dist
