#include "attn/train/toy_trainer.h"

#include <chrono>

#include "attn/train/clip_grad.h"
#include "attn/train/optim.h"

namespace attn::train {

namespace {
std::string digits(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) s += id >= data::kFirstDigit ? char('0' + id - data::kFirstDigit) : '?';
  return s;
}

double accuracy(const models::ToySeq2Seq& model, const data::Seq2SeqBatch& b, int max_len,
                std::vector<ToyExample>* examples) {
  auto out = model.greedy(b.src, b.src_lengths, max_len + 2);
  int64_t right = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    right += out[i] == b.targets[i];
    if (examples && i < 5) {
      std::vector<int> src(b.targets[i].rbegin(), b.targets[i].rend());
      examples->push_back({digits(src), digits(b.targets[i]), digits(out[i])});
    }
  }
  return double(right) / double(out.size());
}
}  // namespace

ToyResult train_toy_reverse(const ToyTrainOptions& opt, const std::function<void(const ToyProgress&)>& on_progress) {
  Rng init_rng(opt.seed), data_rng(opt.seed + 1), eval_rng(opt.seed + 1000003);
  models::ToySeq2Seq model(opt.model, init_rng);
  data::Seq2SeqBatch eval = data::reverse_digits_batch(opt.eval_size, opt.min_len, opt.max_len, eval_rng);
  AdamOptions ao;
  ao.lr = opt.lr;
  Adam adam(model.named_parameters(), ao);

  auto t0 = std::chrono::steady_clock::now(), window_start = t0;
  double loss_sum = 0, tokens = 0;
  ToyResult result;
  for (int step = 1; step <= opt.steps; ++step) {
    data::Seq2SeqBatch b = data::reverse_digits_batch(opt.batch, opt.min_len, opt.max_len, data_rng);
    adam.zero_grad();
    Tensor loss = model.loss(b);
    backward(loss);
    clip_grad_norm(model.named_parameters(), opt.clip);
    adam.step();
    loss_sum += loss.item();
    for (int64_t n : b.src_lengths) tokens += double(n + 1);  // target tokens incl. end-of-sentence
    if (step % opt.log_every == 0 || step == opt.steps) {
      auto now = std::chrono::steady_clock::now();
      int window = step % opt.log_every ? step % opt.log_every : opt.log_every;
      ToyProgress p;
      p.step = step;
      p.loss = loss_sum / window;
      p.tokens_per_s = tokens / std::chrono::duration<double>(now - window_start).count();
      p.elapsed_s = std::chrono::duration<double>(now - t0).count();
      p.eval_accuracy = accuracy(model, eval, opt.max_len, nullptr);
      result.final_loss = p.loss;
      if (on_progress) on_progress(p);
      loss_sum = 0;
      tokens = 0;
      window_start = std::chrono::steady_clock::now();
    }
  }
  result.eval_accuracy = accuracy(model, eval, opt.max_len, &result.examples);
  result.parameters = model.named_parameters();
  return result;
}

}  // namespace attn::train
