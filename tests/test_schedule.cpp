// The training schedule (train/schedule.h): keep-best, learning-rate decay on
// plateau, early stopping, the budget, and its counters through JSON.
#include <gtest/gtest.h>

#include <cmath>

#include "attn/train/schedule.h"

namespace attn::train {
namespace {

Validation at(double bleu, double ppl) {
  Validation v;
  v.bleu = bleu;
  v.perplexity = ppl;
  return v;
}

TrainOptions plateau_options() {
  TrainOptions t;
  t.metric = "bleu";
  t.lr_patience = 2;
  t.lr_decay = 0.5;
  t.min_lr = 0.3;
  t.early_stop = 5;
  return t;
}

// BLEU 10, then five validations without a better one: the LR halves after
// every second one in a row and never goes below min_lr; the fifth stops.
TEST(Schedule, DecaysOnPlateauAndStopsEarly) {
  Schedule s(plateau_options());
  double lr = 1.0;
  auto validate = [&](double bleu, double ppl, int64_t step) {
    ValidationVerdict v = s.on_validation(at(bleu, ppl), step, lr);
    if (v.new_lr) lr = *v.new_lr;
    return v;
  };
  EXPECT_TRUE(validate(10, 5, 100).better);
  EXPECT_FALSE(validate(9, 4, 200).better);  // a lower perplexity does not make a lower BLEU better
  EXPECT_EQ(lr, 1.0);
  ValidationVerdict second = validate(10, 6, 300);  // a tie with a higher perplexity is not better
  EXPECT_FALSE(second.better);
  ASSERT_TRUE(second.new_lr.has_value());
  EXPECT_EQ(lr, 0.5);
  EXPECT_FALSE(validate(8, 6, 400).new_lr.has_value());
  EXPECT_EQ(validate(8, 6, 500).new_lr.value_or(-1), 0.3) << "0.25 is below min_lr 0.3";
  EXPECT_EQ(s.state().bad_validations, 4);
  EXPECT_EQ(s.state().best_score.value(), 10);
  ValidationVerdict fifth = validate(7, 6, 600);
  EXPECT_TRUE(fifth.early_stop);
  EXPECT_EQ(s.state().last_valid_step, 600);
  EXPECT_EQ(s.state().best_bleu.value(), 10);
  EXPECT_EQ(s.state().best_perplexity.value(), 4);
}

// A better model resets the plateau; a BLEU tie is broken by perplexity.
TEST(Schedule, ImprovementResetsThePlateau) {
  Schedule s(plateau_options());
  s.on_validation(at(10, 5), 1, 1.0);
  s.on_validation(at(9, 5), 2, 1.0);
  EXPECT_EQ(s.state().bad_validations, 1);
  EXPECT_TRUE(s.on_validation(at(10, 4.5), 3, 1.0).better) << "same BLEU, lower perplexity";
  EXPECT_EQ(s.state().bad_validations, 0);
  EXPECT_FALSE(s.on_validation(at(9, 4), 4, 1.0).new_lr.has_value()) << "the count restarted at the new best";
}

TEST(Schedule, PerplexityMetricWantsLower) {
  TrainOptions t = plateau_options();
  t.metric = "perplexity";
  Schedule s(t);
  EXPECT_TRUE(s.on_validation(at(0, 9), 1, 1).better);
  EXPECT_TRUE(s.on_validation(at(0, 8), 2, 1).better);
  EXPECT_FALSE(s.on_validation(at(50, 8.5), 3, 1).better) << "BLEU does not count under metric perplexity";
  EXPECT_EQ(s.state().best_score.value(), 8);
}

TEST(Schedule, NeverDecaysOrStopsWhenOff) {
  TrainOptions t = plateau_options();
  t.lr_patience = 0;
  t.early_stop = 0;
  Schedule s(t);
  s.on_validation(at(10, 1), 1, 1);
  for (int i = 0; i < 20; ++i) {
    ValidationVerdict v = s.on_validation(at(1, 9), 2 + i, 1);
    EXPECT_FALSE(v.new_lr.has_value());
    EXPECT_FALSE(v.early_stop);
  }
}

// Each limit stops on its own; with several, steps are named before minutes before epochs.
TEST(Schedule, BudgetLimits) {
  TrainOptions t;
  t.max_steps = 100;
  t.max_epochs = 3;
  t.max_minutes = 1;
  Schedule s(t);
  EXPECT_EQ(s.budget_reached(99, 2), "");
  EXPECT_EQ(s.budget_reached(100, 2), "max_steps");
  EXPECT_EQ(s.budget_reached(99, 3), "max_epochs");
  s.add_training_time(59.5);
  EXPECT_EQ(s.budget_reached(10, 0), "");
  s.add_training_time(0.5);
  EXPECT_EQ(s.budget_reached(10, 0), "max_minutes");
  EXPECT_EQ(s.budget_reached(100, 3), "max_steps");
  t.max_steps = t.max_epochs = 0;
  t.max_minutes = 0;
  EXPECT_EQ(Schedule(t).budget_reached(1 << 30, 1 << 20), "") << "no limit set";
}

// Seconds left: the nearest limit at the given step time.
TEST(Schedule, SecondsLeftToTheNearestLimit) {
  TrainOptions t;
  t.max_steps = 100;
  t.max_epochs = 0;
  Schedule s(t);
  EXPECT_DOUBLE_EQ(s.seconds_left(40, 0, 40, 50, 0.5), 30.0);
  t.max_epochs = 1;  // 50 steps per epoch: 10 left in epoch 0
  EXPECT_DOUBLE_EQ(Schedule(t).seconds_left(40, 0, 40, 50, 0.5), 5.0);
  t.max_minutes = 0.05;  // 3 s of training
  Schedule timed(t);
  timed.add_training_time(1);
  EXPECT_DOUBLE_EQ(timed.seconds_left(40, 0, 40, 50, 0.5), 2.0);
  t.max_steps = t.max_epochs = 0;
  t.max_minutes = 0;
  EXPECT_TRUE(std::isinf(Schedule(t).seconds_left(40, 0, 40, 50, 0.5)));
}

// Every counter survives the checkpoint's JSON: a resumed schedule decides as
// the uninterrupted one.
TEST(Schedule, CountersRoundTripThroughJson) {
  Schedule s(plateau_options());
  s.on_validation(at(10, 5), 1, 1.0);
  s.on_validation(at(9, 4), 2, 1.0);
  s.add_training_time(12.25);
  ScheduleState r = ScheduleState::from_json(s.state().to_json(), s.state().best_score);
  EXPECT_EQ(r.bad_validations, 1);
  EXPECT_EQ(r.last_valid_step, 2);
  EXPECT_EQ(r.elapsed_s, 12.25);
  EXPECT_EQ(r.best_bleu, s.state().best_bleu);
  EXPECT_EQ(r.best_perplexity, s.state().best_perplexity);
  Schedule resumed(plateau_options(), r);
  EXPECT_TRUE(s.on_validation(at(8, 6), 3, 1.0).new_lr.has_value());
  EXPECT_TRUE(resumed.on_validation(at(8, 6), 3, 1.0).new_lr.has_value()) << "the second bad validation in a row";
  EXPECT_THROW(ScheduleState::from_json("{\"bad_validations\": \"x\"}", std::nullopt), std::runtime_error);
}

}  // namespace
}  // namespace attn::train
