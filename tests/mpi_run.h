// `mpirun -np N attn train ...` as a child process, for the data-parallel
// tests (test_mpi_train.cpp), and the ranks it started.
#pragma once
#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "train_test_util.h"  // spawn_command

namespace attn::testing {

// Starts mpirun with N ranks of `attn train --config cfg extra...`, stdout and
// stderr into `output`; returns mpirun's pid. --oversubscribe: CI's machine
// has 2 cores and the test process takes part of one. --allow-run-as-root
// when the test runs as root (CI's container does): Open MPI refuses root
// otherwise, to protect a real system from a job run by mistake as root; a
// throwaway container has nothing to protect. sigkill_timeout (Open MPI's
// odls_base_sigkill_timeout): when mpirun ends a job (SIGTERM to it, a rank
// dead) it sends SIGTERM to every rank, and SIGKILL to a rank still alive this
// many seconds later (1 by default: too short for a checkpoint).
inline pid_t spawn_mpirun(int ranks, const std::string& cfg, const std::vector<std::string>& extra,
                          const std::string& output, int sigkill_timeout = 30) {
  std::vector<std::string> args = {"/usr/bin/mpirun", "--oversubscribe", "-np", std::to_string(ranks), "--mca",
                                   "odls_base_sigkill_timeout", std::to_string(sigkill_timeout)};
  if (::geteuid() == 0) args.insert(args.begin() + 1, "--allow-run-as-root");
  for (const std::string& a : {std::string(ATTN_BINARY_DIR) + "/attn", std::string("train"), std::string("--config"), cfg})
    args.push_back(a);
  args.insert(args.end(), extra.begin(), extra.end());
  return spawn_command(std::move(args), output);
}

// The pid of rank `rank` among mpirun's children (from /proc: the child
// whose environment holds OMPI_COMM_WORLD_RANK=rank); 0 when none.
inline pid_t rank_pid(pid_t mpirun, int rank) {
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  pid_t found = 0;
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = pid_t(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != mpirun) continue;
    std::ifstream env("/proc/" + std::to_string(pid) + "/environ");
    const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
    for (std::string var; std::getline(env, var, '\0');)
      if (var == want) found = pid;
  }
  ::closedir(d);
  return found;
}

}  // namespace attn::testing
