// join_world with MPI: MPI_Init when mpirun started this process.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "attn/dist/launch_env.h"
#include "attn/dist/mpi_collective.h"
#include "attn/dist/world.h"

namespace attn::dist {
namespace {

class MpiWorld : public World {
public:
  explicit MpiWorld(double timeout_s) {
    // one thread calls MPI (the trainer's); OpenMP threads inside kernels never do
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    collective_ = std::make_unique<MpiCollective>(MPI_COMM_WORLD, timeout_s);
  }
  ~MpiWorld() override {
    collective_.reset();
    MPI_Finalize();
  }
  train::Collective& ranks() override { return *collective_; }
  [[noreturn]] void abort(const std::string& message, int code) override {
    std::fprintf(stderr, "attn train: rank %d: %s\n", collective_->rank(), message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();  // MPI_Abort does not return
  }

private:
  std::unique_ptr<MpiCollective> collective_;
};

}  // namespace

int launched_ranks() { return launched_ranks_from_env(); }

std::unique_ptr<World> join_world(double timeout_s) {
  // on its own a process skips MPI_Init: it would start a singleton MPI runtime for nothing
  if (launched_ranks() == 0) return nullptr;
  return std::make_unique<MpiWorld>(timeout_s);
}

}  // namespace attn::dist
