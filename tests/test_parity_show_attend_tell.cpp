// Parity with PyTorch (tests/oracle/show_attend_tell.py) for the captioner's
// encode and first two soft-attention steps: log-probabilities, attention
// weights and the gradient of every parameter and of the images, on the
// oracle's parameters and inputs, against torch in float64.
#include <gtest/gtest.h>

#include "attn/autograd/node.h"
#include "attn/models/show_attend_tell/show_attend_tell.h"
#include "caption_run.h"
#include "oracle.h"

namespace attn::testing::parity_show_attend_tell_test {
namespace {

TEST(ParityTorchShowAttendTell, TwoSoftStepsAndEveryGradientMatchTorch) {
  // B 2, 8x8 images, 2 CNN blocks of 8 and 16 channels (2x2 grid), E 6, Hd 7, A 5, V 9
  const SafetensorsFile f = run_oracle("show_attend_tell.py", "2 8 8 2 6 7 5 9");
  const models::ModelConfig c = tiny_captioner_config(models::ImageAttention::Soft);
  Rng init(1);
  models::ShowAttendTell model(c, init, 1);
  model.train(false);
  EXPECT_EQ(load_oracle_params(model, f), 26);
  Tensor x = f.get("x").clone().set_requires_grad(true);
  models::Encoded e = model.encode(x, {4, 4});
  models::StepOutput s1 = model.step(e.memory, e.state, Tensor::full({2}, float(c.specials.bos)), 0);
  models::StepOutput s2 = model.step(e.memory, s1.state, f.get("prev2"), 1);
  EXPECT_CLOSE(s1.log_probs, f.get("log_probs1"), 1e-4, "step 1 log-probabilities");
  EXPECT_CLOSE(s2.log_probs, f.get("log_probs2"), 1e-4, "step 2 log-probabilities");
  EXPECT_CLOSE(*s1.attention.find(models::kAttentionMap), f.get("weights1"), 1e-4, "step 1 weights");
  EXPECT_CLOSE(*s2.attention.find(models::kAttentionMap), f.get("weights2"), 1e-4, "step 2 weights");
  backward(sum_all(s1.log_probs * f.get("R1")) + sum_all(s2.log_probs * f.get("R2")));
  // the gradients pass two LSTM steps, the attention and the CNN in float32: 3e-4
  for (auto& [name, p] : model.named_parameters()) EXPECT_CLOSE(p.grad(), f.get("grad." + name), 3e-4, name);
  EXPECT_CLOSE(x.grad(), f.get("grad.x"), 3e-4, "images");
}

}  // namespace
}  // namespace attn::testing::parity_show_attend_tell_test
