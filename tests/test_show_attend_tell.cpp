// The captioner (models/show_attend_tell.h): its config, the gradient of its
// loss against finite differences, its step against the teacher-forced run,
// and the REINFORCE estimator of hard attention against the exact gradient it
// estimates.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <memory>

#include "attn/autograd/node.h"
#include "attn/models/show_attend_tell/show_attend_tell.h"
#include "caption_run.h"
#include "tiny_models.h"
#include "compare.h"

namespace attn::testing::show_attend_tell_test {
namespace {

using models::ImageAttention;
using models::ModelConfig;
using models::ShowAttendTell;

// caption_run.h's tiny captioner with a regulariser weight that is not 1.
ModelConfig tiny_config(ImageAttention a) {
  ModelConfig c = tiny_captioner_config(a);
  captioner_of(c).attention_reg = 0.7;
  return c;
}

// B images N(0, 1) and captions of `words` ids each (ids 4..8, then EOS), teacher-forcing tensors.
data::Seq2SeqBatch tiny_batch(const ModelConfig& c, int64_t B, const std::vector<int64_t>& words, uint64_t seed) {
  Rng rng(seed);
  data::Seq2SeqBatch b;
  b.src = Tensor::empty({B, 3, captioner_of(c).image_size, captioner_of(c).image_size});
  for (int64_t i = 0; i < b.src.numel(); ++i) b.src.data()[i] = rng.normal();
  b.src_lengths.assign(size_t(B), captioner_of(c).grid * captioner_of(c).grid);
  int64_t T = 0;
  for (int64_t w : words) T = std::max(T, w + 1);
  b.tgt_in = Tensor::zeros({B, T});
  b.tgt_out = Tensor::zeros({B, T});  // pad = 0
  for (int64_t k = 0; k < B; ++k) {
    std::vector<int> ids;
    for (int64_t t = 0; t < words[size_t(k)]; ++t) ids.push_back(4 + int(rng.below(5)));
    b.tgt_in.data()[k * T] = float(c.specials.bos);
    for (size_t t = 0; t < ids.size(); ++t) {
      b.tgt_in.data()[k * T + int64_t(t) + 1] = float(ids[t]);
      b.tgt_out.data()[k * T + int64_t(t)] = float(ids[t]);
    }
    b.tgt_out.data()[k * T + int64_t(ids.size())] = float(c.specials.eos);
    b.targets.push_back(ids);
  }
  return b;
}

TEST(ShowAttendTell, ConfigIsCheckedNamingTheField) {
  ModelConfig c = tiny_config(ImageAttention::Soft);
  EXPECT_NO_THROW(models::validate(c));
  EXPECT_EQ(models::cnn_blocks(captioner_of(c)), 2);
  auto fails = [&](ModelConfig bad, const std::string& field) {
    try {
      models::validate(bad);
      ADD_FAILURE() << "accepted a bad " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  ModelConfig g = c;
  captioner_of(g).grid = 3;  // 8 / 3 is no power of 2
  fails(g, "grid");
  captioner_of(g).grid = 8;  // no CNN block
  fails(g, "grid");
  ModelConfig ch = c;
  captioner_of(ch).cnn_channels = 12;
  fails(ch, "cnn_channels");
  ModelConfig src = c;
  src.src_vocab = 100;
  fails(src, "src_vocab");
  ModelConfig decay = c;
  captioner_of(decay).baseline_decay = 1.0;
  fails(decay, "baseline_decay");
  ModelConfig weight = c;
  captioner_of(weight).reinforce_weight = -0.5;
  fails(weight, "reinforce_weight");
  // JSON round trip keeps every captioning field
  captioner_of(c).image_attention = ImageAttention::Hard;
  captioner_of(c).entropy_bonus = 0.25;
  captioner_of(c).reinforce_weight = 0.125;
  const ModelConfig back = models::model_config_from_json(models::to_json(c));
  EXPECT_EQ(models::to_json(back), models::to_json(c));
  EXPECT_EQ(captioner_of(back).image_attention, ImageAttention::Hard);
  EXPECT_EQ(captioner_of(back).grid, 2);
  EXPECT_EQ(captioner_of(back).reinforce_weight, 0.125);
}

// Analytic gradient of the training loss (cross-entropy + the doubly
// stochastic regulariser) against central differences, for a few elements of
// every parameter tensor.
void expect_loss_gradient_matches(ImageAttention a) {
  const ModelConfig c = tiny_config(a);
  Rng init(3);
  ShowAttendTell model(c, init, 5);
  model.train(true);
  const data::Seq2SeqBatch b = tiny_batch(c, 2, {3, 1}, 11);
  model.zero_grad();
  Tensor loss = model.loss(b);
  backward(loss);
  const float h = 1e-3f;  // small: ReLU and max-pool have kinks a wider step can cross
  int checked = 0;
  for (auto& [name, p] : model.named_parameters()) {
    Tensor g = p.grad();
    ASSERT_TRUE(g.defined()) << name << " got no gradient";
    for (int64_t k = 0; k < 3; ++k) {
      const int64_t i = (k * 7919) % p.numel();
      const float x = p.data()[i];
      double fd;
      {
        NoGradGuard ng;
        p.data()[i] = x + h;
        const double up = model.loss(b).item();
        p.data()[i] = x - h;
        const double down = model.loss(b).item();
        p.data()[i] = x;
        fd = (up - down) / (2 * h);
      }
      EXPECT_NEAR(g.data()[i], fd, 2e-3 + 3e-2 * std::abs(fd)) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(ShowAttendTell, SoftLossGradientMatchesFiniteDifferences) { expect_loss_gradient_matches(ImageAttention::Soft); }
TEST(ShowAttendTell, NoAttentionLossGradientMatchesFiniteDifferences) {
  expect_loss_gradient_matches(ImageAttention::None);
}

// A batch whose captions share images (src_rows: each image encoded once)
// gives the loss and every gradient of the batch that repeats the images.
TEST(ShowAttendTell, SharedImagesEqualRepeatedImages) {
  const ModelConfig c = tiny_config(ImageAttention::Soft);
  Rng init(3);
  ShowAttendTell model(c, init, 5);
  model.train(true);
  data::Seq2SeqBatch repeated = tiny_batch(c, 3, {3, 1, 2}, 11);
  data::Seq2SeqBatch shared = repeated;  // captions 0 and 2 describe image 0
  const int64_t image = repeated.src.numel() / 3;
  std::copy(repeated.src.data(), repeated.src.data() + image, repeated.src.data() + 2 * image);
  shared.src = Tensor::empty({2, 3, captioner_of(c).image_size, captioner_of(c).image_size});
  std::copy(repeated.src.data(), repeated.src.data() + 2 * image, shared.src.data());
  shared.src_lengths.resize(2);
  shared.src_rows = {0, 1, 0};
  auto run = [&](const data::Seq2SeqBatch& b) {
    model.zero_grad();
    Tensor loss = model.loss(b);
    backward(loss);
    std::vector<Tensor> grads;
    for (auto& [name, p] : model.named_parameters()) {
      EXPECT_TRUE(p.grad().defined()) << name << " got no gradient";
      grads.push_back(p.grad().defined() ? p.grad().clone() : Tensor::zeros(p.shape()));
    }
    return std::make_pair(double(loss.item()), grads);
  };
  const auto [loss_r, grads_r] = run(repeated);
  const auto [loss_s, grads_s] = run(shared);
  EXPECT_NEAR(loss_s, loss_r, 1e-6 * std::abs(loss_r));
  const auto params = model.named_parameters();
  for (size_t k = 0; k < grads_r.size(); ++k)
    EXPECT_REL_CLOSE(grads_s[k], grads_r[k], 1e-4, 1e-3, 1e-30, params[k].first);  // sums in another order
  shared.src_rows = {0, 1};
  EXPECT_THROW(model.loss(shared), std::invalid_argument);
}

// The regulariser is the paper's: lambda sum_i (1 - sum_t alpha_ti)^2 / tokens,
// recomputed here from the step-by-step weights.
TEST(ShowAttendTell, RegulariserIsTheDoublyStochasticPenalty) {
  const ModelConfig c = tiny_config(ImageAttention::Soft);
  Rng init(4);
  ShowAttendTell model(c, init, 5);
  model.train(true);
  const data::Seq2SeqBatch b = tiny_batch(c, 2, {3, 1}, 12);
  NoGradGuard ng;
  const ShowAttendTell::LossTerms terms = model.loss_terms(b);
  models::Encoded e = model.encode(b.src, b.src_lengths);
  std::vector<std::vector<double>> sums(2, std::vector<double>(4, 0.0));
  models::DecoderState s = e.state;
  const int64_t T = b.tgt_in.size(1);
  double tokens = 0;
  for (int64_t t = 0; t < T; ++t) {
    Tensor prev = Tensor::empty({2});
    for (int64_t k = 0; k < 2; ++k) prev.data()[k] = b.tgt_in.data()[k * T + t];
    models::StepOutput o = model.step(e.memory, s, prev, t);
    s = o.state;
    for (int64_t k = 0; k < 2; ++k) {
      if (b.tgt_out.data()[k * T + t] == float(c.specials.pad)) continue;
      tokens += 1;
      for (int64_t i = 0; i < 4; ++i) sums[size_t(k)][size_t(i)] += o.attention.find(models::kAttentionMap)->data()[k * 4 + i];
    }
  }
  double penalty = 0;
  for (const auto& row : sums)
    for (double x : row) penalty += (1 - x) * (1 - x);
  EXPECT_NEAR(terms.regulariser.item(), captioner_of(c).attention_reg * penalty / tokens, 1e-5);
  EXPECT_FALSE(terms.reinforce.defined());
}

// step() one token at a time gives the teacher-forced run's log-probabilities
// (eval mode; for hard attention both take the argmax cell).
void expect_step_matches_forced(ImageAttention a) {
  const ModelConfig c = tiny_config(a);
  Rng init(6);
  ShowAttendTell model(c, init, 5);
  model.train(false);
  const data::Seq2SeqBatch b = tiny_batch(c, 3, {2, 4, 1}, 13);
  NoGradGuard ng;
  Tensor logits = model.forced_logits(b);  // [T * B, V]
  models::Encoded e = model.encode(b.src, b.src_lengths);
  models::DecoderState s = e.state;
  const int64_t T = b.tgt_in.size(1), B = 3, V = c.tgt_vocab;
  for (int64_t t = 0; t < T; ++t) {
    Tensor prev = Tensor::empty({B});
    for (int64_t k = 0; k < B; ++k) prev.data()[k] = b.tgt_in.data()[k * T + t];
    models::StepOutput o = model.step(e.memory, s, prev, t, models::StepDetail::Internals);
    ASSERT_EQ(o.internals.find(models::internal::kScores)->shape(), Shape({B, 4}));
    ASSERT_EQ(o.internals.find(models::internal::kContext)->shape(), Shape({B, 16}));
    s = o.state;
    for (int64_t k = 0; k < B; ++k) {
      const float* row = logits.data() + (t * B + k) * V;
      double lse = 0, mx = row[0];
      for (int64_t v = 0; v < V; ++v) mx = std::max<double>(mx, row[v]);
      for (int64_t v = 0; v < V; ++v) lse += std::exp(row[v] - mx);
      lse = mx + std::log(lse);
      for (int64_t v = 0; v < V; ++v) EXPECT_NEAR(o.log_probs.data()[k * V + v], row[v] - lse, 1e-4);
    }
  }
}

TEST(ShowAttendTell, SoftStepMatchesTeacherForcing) { expect_step_matches_forced(ImageAttention::Soft); }
TEST(ShowAttendTell, HardStepMatchesTeacherForcing) { expect_step_matches_forced(ImageAttention::Hard); }

// A captioner whose hard attention takes the cells the test gives and records
// the weights (alpha_t, on the tape) it chose them from.
class FixedCells : public ShowAttendTell {
public:
  using ShowAttendTell::ShowAttendTell;
  std::deque<int64_t> cells;           // the next choices; empty: drawn as usual
  mutable std::vector<Tensor> weights;  // alpha_t of every choice made from `cells`
protected:
  std::vector<int64_t> choose_cells(const Tensor& w) const override {
    if (cells.empty()) return ShowAttendTell::choose_cells(w);
    weights.push_back(w);
    std::vector<int64_t> out{cells.front()};
    const_cast<std::deque<int64_t>&>(cells).pop_front();
    return out;
  }
};

// REINFORCE with a baseline estimates the gradient of the expected loss
// E_s[CE(y | s, a)] over the cells s_1, s_2 of a one-word caption (two steps):
// the exact gradient enumerates all 4 x 4 cell sequences,
// sum_{s1,s2} alpha_1(s1) alpha_2(s2 | s1) CE(s1, s2), and the average of the
// estimator over many draws must approach it (also for the attention's
// parameters, which get no other gradient under hard attention).
TEST(ShowAttendTell, ReinforceEstimatorAveragesToTheExactGradient) {
  ModelConfig c = tiny_config(ImageAttention::Hard);
  captioner_of(c).attention_reg = 0;
  captioner_of(c).entropy_bonus = 0;
  captioner_of(c).hard_expected_prob = 0;  // every caption draws its cells: the pure estimator
  Rng init(8);
  FixedCells model(c, init, 9);
  model.train(true);
  const data::Seq2SeqBatch b = tiny_batch(c, 1, {1}, 14);
  const std::vector<std::string> names = {"attention.query.weight", "attention.v", "attention.key.weight",
                                          "decoder.weight_ih", "output.weight"};
  auto grads = [&] {
    std::vector<std::vector<double>> g;
    for (const auto& n : names) {
      Tensor t = model.parameter(n).grad();
      g.emplace_back(t.data(), t.data() + t.numel());
    }
    return g;
  };
  // exact: sum over the 16 cell sequences on one tape
  model.zero_grad();
  Tensor expected = Tensor::zeros({});
  for (int64_t s1 = 0; s1 < 4; ++s1)
    for (int64_t s2 = 0; s2 < 4; ++s2) {
      model.cells = {s1, s2};
      model.weights.clear();
      Tensor ce = model.loss_terms(b).cross_entropy;
      ASSERT_EQ(model.weights.size(), 2u);
      Tensor p = sum_all(slice(model.weights[0], 1, s1, 1)) * sum_all(slice(model.weights[1], 1, s2, 1));
      expected = expected + p * ce;
    }
  backward(expected);
  const auto exact = grads();
  // the estimator, averaged over draws
  const int draws = 4000;
  model.zero_grad();
  for (int i = 0; i < draws; ++i) backward(model.loss(b));
  const auto estimate = grads();
  for (size_t n = 0; n < names.size(); ++n) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < exact[n].size(); ++i) {
      diff += std::pow(estimate[n][i] / draws - exact[n][i], 2);
      norm += exact[n][i] * exact[n][i];
    }
    EXPECT_GT(norm, 1e-10) << names[n];
    EXPECT_LT(std::sqrt(diff / norm), 0.1) << names[n] << ": relative error of the averaged estimator";
  }
  EXPECT_NE(model.baseline(), 0.0f);  // the moving average moved
}

// Two captioners of configs a and b with the same parameters (init seed 8)
// and the same draws (dropout seed 9), both in training mode.
struct Twins {
  std::unique_ptr<ShowAttendTell> a, b;
};
Twins twins(const ModelConfig& a, const ModelConfig& b) {
  Rng init_a(8), init_b(8);
  Twins t{std::make_unique<ShowAttendTell>(a, init_a, 9), std::make_unique<ShowAttendTell>(b, init_b, 9)};
  t.a->train(true);
  t.b->train(true);
  return t;
}

// Xu et al.'s variance reduction: a caption that takes the expected context
// (hard_expected_prob 1: all of them) trains exactly as soft attention does,
// with no REINFORCE term; at 0.5 about half the captions draw their cells.
TEST(ShowAttendTell, HardCaptionsTakingTheExpectationTrainAsSoft) {
  ModelConfig soft_c = tiny_config(ImageAttention::Soft), hard_c = tiny_config(ImageAttention::Hard);
  soft_c.dropout = hard_c.dropout = 0;
  captioner_of(hard_c).entropy_bonus = 0;
  captioner_of(hard_c).hard_expected_prob = 1;
  Twins m = twins(soft_c, hard_c);
  ShowAttendTell &soft = *m.a, &hard = *m.b;
  const data::Seq2SeqBatch b = tiny_batch(soft_c, 3, {2, 3, 1}, 15);
  backward(soft.loss(b));
  ShowAttendTell::LossTerms t = hard.loss_terms(b);
  EXPECT_EQ(t.reinforce.item(), 0.0f);
  backward(t.cross_entropy + t.regulariser + t.reinforce);
  for (const std::string n : {"attention.v", "attention.query.weight", "encoder.blocks.0.conv.weight"}) {
    Tensor gs = soft.parameter(n).grad(), gh = hard.parameter(n).grad();
    ASSERT_EQ(gs.numel(), gh.numel());
    for (int64_t i = 0; i < gs.numel(); ++i) ASSERT_NEAR(gh.data()[i], gs.data()[i], 1e-6f) << n << " element " << i;
  }
  EXPECT_EQ(hard.baseline(), 0.0f);  // no caption drew: the baseline did not move
  captioner_of(hard_c).hard_expected_prob = 0.5;
  Rng init_half(8);
  FixedCells half(hard_c, init_half, 9);
  half.train(true);
  int drawn = 0;
  const int batches = 200;
  for (int i = 0; i < batches; ++i) {
    half.weights.clear();
    Tensor r = half.loss_terms(tiny_batch(hard_c, 1, {1}, 16)).reinforce;
    drawn += r.item() != 0.0f;
  }
  EXPECT_GT(drawn, batches * 0.35);
  EXPECT_LT(drawn, batches * 0.65);
}

// lambda_r (reinforce_weight) scales the REINFORCE term alone: two captioners
// with the same parameters and draws differ in it by the ratio of their weights.
TEST(ShowAttendTell, ReinforceWeightScalesTheReinforceTerm) {
  ModelConfig c = tiny_config(ImageAttention::Hard);
  captioner_of(c).hard_expected_prob = 0;
  ModelConfig quarter = c;
  captioner_of(quarter).reinforce_weight = 0.25;
  Twins m = twins(c, quarter);
  ShowAttendTell &full = *m.a, &scaled = *m.b;
  const data::Seq2SeqBatch b = tiny_batch(c, 3, {2, 3, 1}, 15);
  ShowAttendTell::LossTerms f = full.loss_terms(b), s = scaled.loss_terms(b);
  ASSERT_NE(f.reinforce.item(), 0.0f);
  EXPECT_NEAR(s.reinforce.item(), 0.25f * f.reinforce.item(), 1e-6f * std::abs(f.reinforce.item()));
  EXPECT_EQ(s.cross_entropy.item(), f.cross_entropy.item());
  EXPECT_EQ(s.entropy.item(), f.entropy.item());
}


// The REINFORCE term weighs each step's choice by the reward to go: with the
// first batch's baseline (its own mean log-likelihood per token) a one-caption
// batch has advantage 0 under eq. 12's whole-caption reward, and this value
// under the reward to go: -(1/n) sum_t log alpha_t(s_t) (R_t - n_t R / n), the
// log-probabilities read from step() with the same cells.
TEST(ShowAttendTell, ReinforceWeighsEachChoiceByTheRewardToGo) {
  ModelConfig c = tiny_config(ImageAttention::Hard);
  captioner_of(c).hard_expected_prob = 0, captioner_of(c).entropy_bonus = 0, c.dropout = 0;
  Rng init(8);
  FixedCells model(c, init, 9);
  model.train(true);
  const data::Seq2SeqBatch b = tiny_batch(c, 1, {3}, 17);
  const std::vector<int64_t> cells = {1, 3, 0, 2};  // T = 4 steps: 3 words and EOS
  model.cells.assign(cells.begin(), cells.end());
  const float reinforce = model.loss_terms(b).reinforce.item();
  ASSERT_EQ(model.weights.size(), cells.size());
  std::vector<double> log_choice, reward;
  for (size_t t = 0; t < cells.size(); ++t) log_choice.push_back(std::log(model.weights[t].data()[cells[t]]));
  // the same steps through step(): log p of each target token
  model.cells.assign(cells.begin(), cells.end());
  models::Encoded e = model.encode(b.src, b.src_lengths);
  models::DecoderState state = e.state;
  for (size_t t = 0; t < cells.size(); ++t) {
    models::StepOutput o = model.step(e.memory, state, Tensor::from({b.tgt_in.data()[t]}, {1}), int64_t(t));
    reward.push_back(o.log_probs.data()[int64_t(b.tgt_out.data()[t])]);
    state = o.state;
  }
  const double n = double(cells.size());
  double total = 0;
  for (double r : reward) total += r;
  double expected = 0, to_go = 0;
  for (size_t t = cells.size(); t-- > 0;) {
    to_go += reward[t];
    expected += log_choice[t] * (to_go - double(cells.size() - t) * total / n);
  }
  expected *= -1.0 / n;
  EXPECT_GT(std::abs(expected), 1e-4);  // a case where the reward to go differs from the whole caption's
  EXPECT_NEAR(reinforce, expected, 1e-4 * std::max(1.0, std::abs(expected)));
}


}  // namespace
}  // namespace attn::testing::show_attend_tell_test
