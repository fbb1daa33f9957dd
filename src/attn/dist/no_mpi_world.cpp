// join_world for a build without MPI: a single process, and an mpirun launch
// of several refused by name (each copy would train alone on the same run
// directory).
#include <stdexcept>

#include "attn/dist/world.h"
#include "attn/dist/launch_env.h"

namespace attn::dist {

int launched_ranks() { return launched_ranks_from_env(); }

std::unique_ptr<World> join_world(double) {
  if (const int n = launched_ranks(); n > 1)
    throw std::runtime_error("started as one of " + std::to_string(n) +
                             " processes (mpirun), but this attn was built without MPI: install libopenmpi-dev "
                             "(scripts/install-deps.sh) and configure again, or run a single process");
  return nullptr;
}

}  // namespace attn::dist
