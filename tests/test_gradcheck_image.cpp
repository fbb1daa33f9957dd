// Finite-difference cases for the image ops (conv2d, max_pool2d, group_norm),
// run by the gradcheck table (test_gradcheck.cpp): strides, paddings, odd and
// non-square sizes, with and without bias, one image and several per GEMM.
#include <algorithm>
#include <numeric>

#include "gradcheck.h"

namespace attn::testing::gradcheck_image_test {
namespace {

using T = std::vector<Tensor>;

// Distinct values 0.1 apart in a shuffled order: no window of max_pool2d has
// a tie, and the check's step (1e-2) never changes which element is largest.
void distinct_values(T& in, size_t i) {
  std::vector<float> v(size_t(in[i].numel()));
  std::iota(v.begin(), v.end(), 0.0f);
  Rng r(11);
  shuffle(v, r);
  for (int64_t k = 0; k < in[i].numel(); ++k) in[i].data()[k] = 0.1f * v[size_t(k)] - 0.05f * float(v.size());
}

ATTN_GRADCHECK_CASE({"conv2d", "3x3, stride 1, padding 1, bias, two images in one GEMM", {{2, 3, 5, 6}, {4, 3, 3, 3}, {4}},
                     [](const T& x) { return conv2d(x[0], x[1], x[2], 1, 1); }});
ATTN_GRADCHECK_CASE({"conv2d", "2x3 kernel, stride 2, no padding, no bias, odd sizes", {{3, 2, 7, 6}, {3, 2, 2, 3}},
                     [](const T& x) { return conv2d(x[0], x[1], Tensor(), 2, 0); }});
ATTN_GRADCHECK_CASE({"conv2d", "one image, stride 3, padding 2 (windows wholly in the padding)", {{1, 2, 5, 4}, {2, 2, 3, 3}, {2}},
                     [](const T& x) { return conv2d(x[0], x[1], x[2], 3, 2); }});
ATTN_GRADCHECK_CASE({"conv2d", "1x1 kernel", {{2, 4, 3, 3}, {5, 4, 1, 1}, {5}},
                     [](const T& x) { return conv2d(x[0], x[1], x[2]); }});
ATTN_GRADCHECK_CASE({"conv2d", "fixed input (as an image): weight and bias only", {{2, 3, 6, 6}, {4, 3, 3, 3}, {4}},
                     [](const T& x) { return conv2d(x[0], x[1], x[2], 1, 1); }, nullptr, {false, true, true}});
ATTN_GRADCHECK_CASE({"max_pool2d", "2x2 stride 2, odd width floors", {{2, 3, 6, 5}},
                     [](const T& x) { return max_pool2d(x[0], 2); }, [](T& in) { distinct_values(in, 0); }});
ATTN_GRADCHECK_CASE({"max_pool2d", "3x3 stride 2, overlapping windows", {{1, 2, 7, 7}},
                     [](const T& x) { return max_pool2d(x[0], 3, 2); }, [](T& in) { distinct_values(in, 0); }});
ATTN_GRADCHECK_CASE({"group_norm", "2 groups of 2 channels", {{2, 4, 3, 3}, {4}, {4}},
                     [](const T& x) { return group_norm(x[0], 2, x[1], x[2]); }});
ATTN_GRADCHECK_CASE({"group_norm", "3 groups of 2, non-square", {{3, 6, 2, 5}, {6}, {6}},
                     [](const T& x) { return group_norm(x[0], 3, x[1], x[2]); }});
ATTN_GRADCHECK_CASE({"group_norm", "one group (LayerNorm over the image)", {{2, 3, 2, 2}, {3}, {3}},
                     [](const T& x) { return group_norm(x[0], 1, x[1], x[2]); }});

}  // namespace
}  // namespace attn::testing::gradcheck_image_test
