#include "attn/dist/mpi_collective.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace attn::dist {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kArrivalTag = 28;
constexpr int kTimeoutExit = 124;  // as timeout(1)

int checked_count(int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) + " elements (MPI counts are int)");
  return int(n);
}

}  // namespace

MpiCollective::MpiCollective(MPI_Comm comm, double timeout_s) : timeout_s_(timeout_s) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && (rank_ == 0 || r == 0)) arrival_peers_.push_back(r);
  arrival_in_.assign(arrival_peers_.size(), -1);
  arrival_out_.assign(arrival_peers_.size(), -1);
}

MpiCollective::~MpiCollective() {
  // the last step's arrivals were sent and so will be received
  MPI_Waitall(int(arrival_recvs_.size()), arrival_recvs_.data(), MPI_STATUSES_IGNORE);
  MPI_Waitall(int(arrival_sends_.size()), arrival_sends_.data(), MPI_STATUSES_IGNORE);
  MPI_Comm_free(&comm_);
}

void MpiCollective::barrier() { MPI_Barrier(comm_); }

void MpiCollective::start_sum(float* data, int64_t n) {
  MPI_Request r;
  MPI_Iallreduce(MPI_IN_PLACE, data, checked_count(n, "gradient bucket"), MPI_FLOAT, MPI_SUM, comm_, &r);
  sums_.push_back(r);
}

void MpiCollective::progress() {
  if (sums_.empty()) return;
  int done = 0;
  MPI_Testall(int(sums_.size()), sums_.data(), &done, MPI_STATUSES_IGNORE);
  if (done) sums_.clear();
}

// The previous step's arrivals were all sent (that step's sums completed, and
// a rank sends before it waits), so waiting for them ends promptly.
void MpiCollective::arrive(int64_t step) {
  MPI_Waitall(int(arrival_recvs_.size()), arrival_recvs_.data(), MPI_STATUSES_IGNORE);
  MPI_Waitall(int(arrival_sends_.size()), arrival_sends_.data(), MPI_STATUSES_IGNORE);
  arrival_recvs_.assign(arrival_peers_.size(), MPI_REQUEST_NULL);
  arrival_sends_.assign(arrival_peers_.size(), MPI_REQUEST_NULL);
  step_ = step;
  for (size_t i = 0; i < arrival_peers_.size(); ++i) {
    arrival_out_[i] = step;
    MPI_Irecv(&arrival_in_[i], 1, MPI_INT64_T, arrival_peers_[i], kArrivalTag, comm_, &arrival_recvs_[i]);
    MPI_Isend(&arrival_out_[i], 1, MPI_INT64_T, arrival_peers_[i], kArrivalTag, comm_, &arrival_sends_[i]);
  }
}

void MpiCollective::finish_sums(int64_t step) {
  arrive(step);
  wait(sums_, "the gradient sum of step " + std::to_string(step), true);
}

void MpiCollective::sum(std::vector<double>& values) {
  std::vector<MPI_Request> r(1);
  MPI_Iallreduce(MPI_IN_PLACE, values.data(), checked_count(int64_t(values.size()), "sum"), MPI_DOUBLE, MPI_SUM,
                 comm_, &r[0]);
  wait(r, "the figures of step " + std::to_string(step_), true);
}

void MpiCollective::broadcast(std::string& text) {
  uint64_t n = text.size();
  std::vector<MPI_Request> r(1);
  MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, comm_, &r[0]);
  wait(r, "rank 0's validation verdict after step " + std::to_string(step_), true);
  text.resize(size_t(n));
  r.assign(1, MPI_REQUEST_NULL);
  MPI_Ibcast(text.data(), checked_count(int64_t(n), "broadcast"), MPI_CHAR, 0, comm_, &r[0]);
  wait(r, "rank 0's validation verdict after step " + std::to_string(step_), true);
}

std::vector<std::string> MpiCollective::gather(const std::string& text) {
  const std::string what = "the random streams of the checkpoint after step " + std::to_string(step_);
  int n = checked_count(int64_t(text.size()), "gather");
  std::vector<int> sizes(rank_ == 0 ? size_t(size_) : 0);
  std::vector<MPI_Request> r(1);
  MPI_Igather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm_, &r[0]);
  wait(r, what, true);
  std::vector<int> offsets(sizes.size());
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    offsets[i] = checked_count(total, "gather");
    total += sizes[i];
  }
  std::string all(size_t(total), '\0');
  r.assign(1, MPI_REQUEST_NULL);
  MPI_Igatherv(text.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, comm_, &r[0]);
  wait(r, what, true);
  std::vector<std::string> out;
  for (size_t i = 0; i < sizes.size(); ++i) out.push_back(all.substr(size_t(offsets[i]), size_t(sizes[i])));
  return out;
}

// Polls (MPI moves non-blocking operations on inside its calls), yielding the
// core between polls to a rank that shares it (mpirun --oversubscribe).
void MpiCollective::wait(std::vector<MPI_Request>& reqs, const std::string& what, bool name_missing) {
  const double limit = rank_ == 0 ? timeout_s_ : timeout_s_ * 1.1 + 2;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  for (;;) {
    int done = 0;
    MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) break;
    if (Clock::now() > deadline) timed_out(what, name_missing);
    std::this_thread::yield();
  }
  reqs.clear();
}

void MpiCollective::timed_out(const std::string& what, bool name_missing) {
  std::string missing;
  if (name_missing)
    for (size_t i = 0; i < arrival_recvs_.size(); ++i) {
      int arrived = 0;
      MPI_Test(&arrival_recvs_[i], &arrived, MPI_STATUS_IGNORE);
      if (!arrived) missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(arrival_peers_[i]);
    }
  const double limit = rank_ == 0 ? timeout_s_ : timeout_s_ * 1.1 + 2;
  std::string msg = "attn train: rank " + std::to_string(rank_) + ": waited " + std::to_string(int(limit)) +
                    " s for " + what + " (train.dist_timeout_s = " + std::to_string(timeout_s_) + "): ";
  if (!missing.empty())
    msg += missing + " did not reach step " + std::to_string(step_) + "'s gradient sum (dead, stopped or hung)";
  else if (rank_ == 0)
    msg += "every rank reached step " + std::to_string(step_) + " but the operation did not complete";
  else
    msg += "rank 0 reached step " + std::to_string(step_) + "; another rank did not (rank 0 names it)";
  std::fprintf(stderr, "%s; ending the job\n", msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kTimeoutExit);
  std::abort();  // MPI_Abort does not return
}

}  // namespace attn::dist
