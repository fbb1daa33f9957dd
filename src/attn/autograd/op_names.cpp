#include <algorithm>
#include <stdexcept>

#include "attn/autograd/ops.h"

namespace attn::autograd {

const std::vector<std::string>& op_names() {
  // One line per differentiable op; nn layers' fused ops are here too.
  static const std::vector<std::string> names = {
      "add", "sub", "mul", "div", "affine", "exp", "log", "tanh", "sigmoid", "relu", "gelu",
      "sum", "sum_all", "matmul", "linear", "linear_act", "softmax", "log_softmax",
      "reshape", "permute", "concat", "slice", "masked_fill",
      "embedding", "dropout", "dropout_hashed", "layer_norm", "cross_entropy",
      "gru", "lstm",
      "sdpa_fused", "sdpa_fused_packed", "sdpa_fused_cross", "additive_step", "additive_scores",
      "unbind", "pack_padded", "unpack_padded", "output_cross_entropy", "rnnsearch_decoder", "luong_decoder",
      "conv2d", "max_pool2d", "group_norm",
  };
  return names;
}

void check_registered(const char* name) {
  static const auto& names = op_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw std::logic_error(std::string("autograd: op '") + name + "' is not in op_names(); add it and its gradcheck case");
}

}  // namespace attn::autograd
