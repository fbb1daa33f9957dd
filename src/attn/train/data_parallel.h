// Data-parallel training as the trainer does it, over any Collective
// (collective.h): N ranks, each a whole replica of the model, train one
// model on the same global batches.
//
//   global batch  the trainer's plan is computed on every rank from the
//                 config alone (task.h: never from N), so the batches, their
//                 order and the vocabulary are those of one process
//   shard         rank r trains on shard_of(batch, r, N), a contiguous slice
//   loss          each rank's mean loss over its own target tokens is
//                 weighted by n_r / n (n the batch's tokens, n_r the
//                 shard's) through backward's seed, so the summed gradient
//                 is that of the batch's mean loss over n tokens
//   gradients     summed in buckets (GradientExchange), each started as soon
//                 as the backward pass has finished its parameters
//   agreement     after each step the ranks sum a few figures (StepFigures)
//                 so that every decision the loop takes (skip a non-finite
//                 step, stop on a signal or a time budget, checkpoint on the
//                 clock) is the same on every rank
//
// Every rank then applies the same optimizer step to the same summed
// gradients and keeps the same parameters.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/nn/module.h"
#include "attn/train/collective.h"

namespace attn::train {

// The examples of `batch` that rank `rank` of `ranks` trains on: a contiguous
// slice; slice sizes differ by at most one (the first ranks the larger);
// empty when the batch has fewer examples than there are ranks.
std::vector<int64_t> shard_of(const std::vector<int64_t>& batch, int rank, int ranks);

// The gradients of `params` summed over the ranks, in buckets of about
// `bucket_bytes`. Buckets hold the parameters in reverse order (the order in
// which a backward pass finishes them: the output layer first, the
// embeddings last) and start in bucket order on every rank, so that the k-th
// sum of every rank is the same bucket.
class GradientExchange {
public:
  GradientExchange(const nn::NamedTensors& params, Collective& collective, int64_t bucket_bytes);

  // The backward pass has finished `param`'s gradient (autograd's
  // LeafReadyFn): starts every bucket, in order, whose parameters are all done.
  void on_ready(const Tensor& param);
  // After the backward pass: starts the remaining buckets (a parameter the
  // pass never reached counts as a zero gradient), waits for every sum and
  // writes it into each parameter's .grad(). Ready for the next step.
  void finish(int64_t step);

  int64_t buckets() const { return int64_t(buckets_.size()); }
  double seconds_waiting() const { return wait_s_; }  // in finish(), summed over the calls

private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    std::vector<float> data;     // the gradients, concatenated
    size_t ready = 0;            // parameters done in this step
  };
  void start_ready_buckets();
  void start(Bucket& b);

  nn::NamedTensors params_;
  Collective& collective_;
  std::vector<Bucket> buckets_;
  std::unordered_map<const TensorImpl*, size_t> bucket_of_;  // parameter -> bucket
  size_t next_ = 0;                                          // the next bucket to start
  double wait_s_ = 0;
};

// The figures of one step the ranks sum, and what they decide from them.
struct StepFigures {
  double loss_tokens = 0;   // this rank's loss times its target tokens (0 for an empty shard)
  double seconds = 0;       // this rank's step time
  bool stop = false;        // this rank was asked to stop (a signal)
  bool checkpoint = false;  // rank 0's clock says checkpoint (train.checkpoint_minutes)
};
// Sums `mine` over the ranks: loss_tokens and seconds summed, stop and
// checkpoint true when any rank's is.
StepFigures agree_on_step(Collective& collective, const StepFigures& mine);

// The model's random streams (Module::named_rngs) as a JSON object's text
// {name: state}, and back. Throws std::runtime_error naming `what` when the
// text does not hold exactly the model's streams.
std::string rng_states_json(const nn::Module& model);
void set_rng_states(nn::Module& model, const std::string& json_text, const std::string& what);

// A fingerprint of the parameters' bytes (FNV-1a, 64 bits): equal on every
// rank while the replicas hold the same parameters, which the trainer checks
// at every checkpoint (a sum that rounded differently on one rank, or a bug,
// would make them drift apart silently).
uint64_t parameter_fingerprint(const nn::NamedTensors& params);

// Seeds every random stream of rank `rank`'s model afresh from (seed, rank,
// step): a rank whose saved streams a checkpoint lacks (resumed on more
// ranks than it was saved from).
void reseed_rank_streams(nn::Module& model, uint64_t seed, int rank, int64_t step);

}  // namespace attn::train
