// train::Collective over MPI: gradient buckets summed with MPI_Iallreduce,
// every wait a polling loop with a deadline (the watchdog), and per step an
// arrival message that lets the watchdog name the rank that never came.
//
// Watchdog: when a wait lasts longer than timeout_s, the rank prints what it
// waited for and who did not arrive, and ends the job (MPI_Abort, exit 124).
// Arrivals: before each collective operation every rank tells rank 0, and
// rank 0 tells every rank, that it got there (one small message each way per
// rank and operation); so rank 0 names the ranks missing from an operation,
// and another rank names rank 0 when rank 0 is missing. Heartbeats: while a
// rank waits it sends the same peers a message every second, so a rank that
// arrived and then stopped inside the operation is named by its silence. The
// ranks other than 0 wait 10% + 2 s longer, so that rank 0, when alive,
// reports first.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <deque>
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
  // One arrival message to or from a peer: its operation number and requests.
  struct Arrival {
    int64_t op = 0, sent = 0, heard = -1;  // message buffers
    MPI_Request send = MPI_REQUEST_NULL, recv = MPI_REQUEST_NULL;
  };
  // Starts operation `what`: a new number, its arrival messages sent and posted.
  void arrive(const std::string& what);
  // Waits for every request of `reqs` (cleared after); past the deadline,
  // ends the job naming the operation and the ranks that did not arrive at it.
  void wait(std::vector<MPI_Request>& reqs);
  [[noreturn]] void timed_out();
  void heartbeat();  // sends one to each peer (when its last one left) and records those heard

  // A peer's heartbeat messages: one receive always posted, one send at a time.
  struct Heartbeat {
    int64_t in = 0, out = 0;  // message buffers
    MPI_Request recv = MPI_REQUEST_NULL, send = MPI_REQUEST_NULL;
    double heard_s = 0;       // when the last one arrived (seconds on this rank's clock)
  };

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  double timeout_s_;
  int64_t op_ = 0;                  // the current operation's number
  std::string what_;                // ... and what it is, for the watchdog's message
  int64_t step_ = 0;                // the step of the last gradient sum
  std::vector<MPI_Request> sums_;   // started gradient sums
  std::vector<int> peers_;          // rank 0: every other rank; another rank: rank 0
  std::vector<std::deque<Arrival>> arrivals_;  // [peers_] messages not yet complete, oldest first
  std::vector<Heartbeat> heartbeats_;          // [peers_]
  double last_beat_s_ = 0;                     // when this rank last sent heartbeats
};

}  // namespace attn::dist
