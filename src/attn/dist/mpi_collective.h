// train::Collective over MPI: gradient buckets summed with MPI_Iallreduce,
// every wait a polling loop with a deadline (the watchdog), and per step an
// arrival message that lets the watchdog name the rank that never came.
//
// Watchdog: when a wait lasts longer than timeout_s, the rank prints what it
// waited for and who did not arrive, and ends the job (MPI_Abort, exit 124).
// Arrivals: at each step's gradient sum every rank tells rank 0, and rank 0
// tells every rank, that it got there; so rank 0 names the ranks missing from
// a step, and another rank names rank 0 when rank 0 is missing. The ranks
// other than 0 wait 10% + 2 s longer, so that rank 0, when alive, reports first.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attn/train/collective.h"

namespace attn::dist {

class MpiCollective : public train::Collective {
public:
  MpiCollective(MPI_Comm comm, double timeout_s);
  ~MpiCollective() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  void start_sum(float* data, int64_t n) override;
  void progress() override;
  void finish_sums(int64_t step) override;
  void sum(std::vector<double>& values) override;
  void broadcast(std::string& text) override;
  std::vector<std::string> gather(const std::string& text) override;

private:
  void arrive(int64_t step);
  // Waits for every request of `reqs` (cleared after); past the deadline,
  // ends the job naming `what` (and the missing ranks when naming them).
  void wait(std::vector<MPI_Request>& reqs, const std::string& what, bool name_missing);
  [[noreturn]] void timed_out(const std::string& what, bool name_missing);

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  double timeout_s_;
  int64_t step_ = -1;                        // the step of the last arrival
  std::vector<MPI_Request> sums_;            // started gradient sums
  std::vector<MPI_Request> arrival_recvs_;   // [peers] this step's arrivals heard (rank 0: from each rank)
  std::vector<MPI_Request> arrival_sends_;
  std::vector<int> arrival_peers_;           // the rank each arrival_recvs_ entry hears
  std::vector<int64_t> arrival_in_, arrival_out_;  // message buffers
};

}  // namespace attn::dist
