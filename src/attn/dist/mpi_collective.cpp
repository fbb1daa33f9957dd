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
constexpr int kHeartbeatTag = 29;
constexpr double kHeartbeatS = 1.0;  // a waiting rank's heartbeat period

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }
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
    if (r != rank_ && (rank_ == 0 || r == 0)) peers_.push_back(r);
  arrivals_.resize(peers_.size());
  heartbeats_.resize(peers_.size());
  for (size_t i = 0; i < peers_.size(); ++i) {
    heartbeats_[i].heard_s = now_s();
    MPI_Irecv(&heartbeats_[i].in, 1, MPI_INT64_T, peers_[i], kHeartbeatTag, comm_, &heartbeats_[i].recv);
  }
}

MpiCollective::~MpiCollective() {
  // every rank ran the same operations: each arrival message has its match
  for (auto& q : arrivals_)
    for (Arrival& a : q) {
      MPI_Wait(&a.send, MPI_STATUS_IGNORE);
      MPI_Wait(&a.recv, MPI_STATUS_IGNORE);
    }
  // heartbeats are 8 bytes, sent eagerly: a send completes whether or not its
  // peer still listens, and the receive still posted is withdrawn
  for (Heartbeat& h : heartbeats_) {
    MPI_Wait(&h.send, MPI_STATUS_IGNORE);
    MPI_Cancel(&h.recv);
    MPI_Wait(&h.recv, MPI_STATUS_IGNORE);
  }
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

// Messages between one pair of ranks arrive in the order sent, so the k-th
// receive posted for a peer hears its k-th arrival.
void MpiCollective::arrive(const std::string& what) {
  ++op_;
  what_ = what;
  for (size_t i = 0; i < peers_.size(); ++i) {
    std::deque<Arrival>& q = arrivals_[i];
    for (;;) {  // drop the completed ones (a deque keeps the others' buffers in place)
      if (q.empty()) break;
      int sent = 0, heard = 0;
      MPI_Test(&q.front().send, &sent, MPI_STATUS_IGNORE);
      MPI_Test(&q.front().recv, &heard, MPI_STATUS_IGNORE);
      if (!sent || !heard) break;
      q.pop_front();
    }
    Arrival& a = q.emplace_back();
    a.op = op_;
    a.sent = op_;
    MPI_Irecv(&a.heard, 1, MPI_INT64_T, peers_[i], kArrivalTag, comm_, &a.recv);
    MPI_Isend(&a.sent, 1, MPI_INT64_T, peers_[i], kArrivalTag, comm_, &a.send);
  }
}

void MpiCollective::finish_sums(int64_t step) {
  step_ = step;
  arrive("the gradient sum of step " + std::to_string(step));
  wait(sums_);
}

void MpiCollective::sum(std::vector<double>& values) {
  arrive("the figures of step " + std::to_string(step_));
  std::vector<MPI_Request> r(1);
  MPI_Iallreduce(MPI_IN_PLACE, values.data(), checked_count(int64_t(values.size()), "sum"), MPI_DOUBLE, MPI_SUM,
                 comm_, &r[0]);
  wait(r);
}

void MpiCollective::broadcast(std::string& text) {
  arrive("rank 0's validation verdict after step " + std::to_string(step_));
  uint64_t n = text.size();
  std::vector<MPI_Request> r(1);
  MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, comm_, &r[0]);
  wait(r);
  text.resize(size_t(n));
  r.assign(1, MPI_REQUEST_NULL);
  MPI_Ibcast(text.data(), checked_count(int64_t(n), "broadcast"), MPI_CHAR, 0, comm_, &r[0]);
  wait(r);
}

std::vector<std::string> MpiCollective::gather(const std::string& text) {
  arrive("the random streams of the checkpoint after step " + std::to_string(step_));
  int n = checked_count(int64_t(text.size()), "gather");
  std::vector<int> sizes(rank_ == 0 ? size_t(size_) : 0);
  std::vector<MPI_Request> r(1);
  MPI_Igather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm_, &r[0]);
  wait(r);
  std::vector<int> offsets(sizes.size());
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    offsets[i] = checked_count(total, "gather");
    total += sizes[i];
  }
  std::string all(size_t(total), '\0');
  r.assign(1, MPI_REQUEST_NULL);
  MPI_Igatherv(text.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0, comm_, &r[0]);
  wait(r);
  std::vector<std::string> out;
  for (size_t i = 0; i < sizes.size(); ++i) out.push_back(all.substr(size_t(offsets[i]), size_t(sizes[i])));
  return out;
}

// Polls (MPI moves non-blocking operations on inside its calls), yielding the
// core between polls to a rank that shares it (mpirun --oversubscribe).
void MpiCollective::wait(std::vector<MPI_Request>& reqs) {
  const double limit = rank_ == 0 ? timeout_s_ : timeout_s_ * 1.1 + 2;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  for (;;) {
    int done = 0;
    MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) break;
    heartbeat();
    if (Clock::now() > deadline) timed_out();
    std::this_thread::yield();
  }
  reqs.clear();
}

void MpiCollective::heartbeat() {
  const double t = now_s();
  for (size_t i = 0; i < peers_.size(); ++i) {
    Heartbeat& h = heartbeats_[i];
    int heard = 0;
    MPI_Test(&h.recv, &heard, MPI_STATUS_IGNORE);
    if (heard) {
      h.heard_s = t;
      MPI_Irecv(&h.in, 1, MPI_INT64_T, peers_[i], kHeartbeatTag, comm_, &h.recv);
    }
  }
  if (t - last_beat_s_ < kHeartbeatS) return;
  last_beat_s_ = t;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Heartbeat& h = heartbeats_[i];
    int sent = 0;
    MPI_Test(&h.send, &sent, MPI_STATUS_IGNORE);
    if (!sent) continue;  // the last one has not left: this peer is not listening
    h.out = op_;
    MPI_Isend(&h.out, 1, MPI_INT64_T, peers_[i], kHeartbeatTag, comm_, &h.send);
  }
}

void MpiCollective::timed_out() {
  std::string missing, silent;
  const double t = now_s();
  for (size_t i = 0; i < peers_.size(); ++i) {
    for (Arrival& a : arrivals_[i]) {
      if (a.op != op_) continue;
      int heard = 0;
      MPI_Test(&a.recv, &heard, MPI_STATUS_IGNORE);
      if (!heard) missing += (missing.empty() ? "rank " : ", rank ") + std::to_string(peers_[i]);
    }
    // arrived, then silent for 3 heartbeat periods: stopped inside the operation
    if (t - heartbeats_[i].heard_s > 3 * kHeartbeatS)
      silent += (silent.empty() ? "rank " : ", rank ") + std::to_string(peers_[i]);
  }
  const double limit = rank_ == 0 ? timeout_s_ : timeout_s_ * 1.1 + 2;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3g", limit);
  std::string msg = "attn train: rank " + std::to_string(rank_) + ": waited " + secs + " s for " + what_ +
                    " (train.dist_timeout_s): ";
  if (!missing.empty())
    msg += missing + " did not arrive (dead, stopped or hung)";
  else if (!silent.empty())
    msg += silent + " arrived, then sent no heartbeat for over " + std::to_string(int(3 * kHeartbeatS)) +
           " s (stopped or hung inside the operation)";
  else if (rank_ == 0)
    msg += "every rank arrived but the operation did not complete";
  else
    msg += "rank 0 arrived; another rank did not (rank 0 names it)";
  std::fprintf(stderr, "%s; ending the job\n", msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kTimeoutExit);
  std::abort();  // MPI_Abort does not return
}

}  // namespace attn::dist
