// The processes of a data-parallel run, as the trainer sees them: their
// number, this one's rank, and the few collective operations the trainer
// needs. The trainer (mt_trainer.h) knows nothing of MPI; the MPI
// implementation is src/attn/dist/ (docs/distributed-training.md), linked by
// the command only, so libattn never depends on MPI.
//
// Every rank calls the operations in the same order with the same sizes (the
// trainer's loop makes the same decisions on every rank: see
// data_parallel.h). Every wait is bounded: an implementation ends the whole
// job, naming the rank that did not arrive, when a wait lasts longer than its
// deadline (a dead, stopped or hung rank), instead of hanging for ever.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::train {

class Collective {
public:
  virtual ~Collective() = default;

  virtual int rank() const = 0;  // 0 .. size() - 1; rank 0 validates, logs and writes the run directory
  virtual int size() const = 0;

  // Waits until every rank arrives (no deadline: it waits on rank 0's
  // vocabulary training, whose length nothing bounds; a rank that dies ends
  // the job through the launcher).
  virtual void barrier() = 0;

  // Starts summing data[0, n) over the ranks in place and returns at once;
  // the data must stay untouched until finish_sums() returns. Sums started
  // in the same order on every rank pair up.
  virtual void start_sum(float* data, int64_t n) = 0;
  // Lets the started sums advance without waiting (called from the backward
  // pass: MPI moves non-blocking collectives on only inside its calls).
  virtual void progress() = 0;
  // Waits for every started sum. `step`: the optimizer step they belong to,
  // for the message when a rank does not arrive within the deadline.
  virtual void finish_sums(int64_t step) = 0;

  // values summed over the ranks, in place, every rank the result (blocking).
  virtual void sum(std::vector<double>& values) = 0;
  // rank 0's `text` to every rank (blocking).
  virtual void broadcast(std::string& text) = 0;
  // Every rank's `text` at rank 0, in rank order; empty on the other ranks.
  virtual std::vector<std::string> gather(const std::string& text) = 0;
};

}  // namespace attn::train
