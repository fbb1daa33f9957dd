// Validation shared by the attention entry points (internal header). Each
// throws std::invalid_argument naming the function and the shapes. And the
// scratch memory the glue gives the kernels compiled per instruction set.
#pragma once
#include <string>

#include "attn/attention/attention.h"
#include "attn/attention/kernel_scratch.h"

namespace attn::attention::detail {

// q [B, H, Lq, D], k [B, H, Lk, Dk], v [B, H, Lk, Dv]; same_dim: Dk == D.
void check_qkv(const char* fn, const Tensor& q, const Tensor& k, const Tensor& v, bool same_dim);
// key_lengths [B] of integers in [0, Lk]; keep broadcastable to [B, H, Lq, Lk].
void check_mask(const char* fn, const Mask& m, int64_t B, int64_t H, int64_t Lq, int64_t Lk);
// Element strides of `keep` read as [B, H, Lq, Lk] (0 on broadcast axes).
void broadcast_strides4(const Tensor& keep, const int64_t dims[4], int64_t strides[4]);
// Scratch for one kernel call from the tensor pool: the storage is `holder`'s
// (a 1-D tensor made on the kernel's request), alive as long as holder is.
KernelScratch pooled_scratch(Tensor& holder);

}  // namespace attn::attention::detail
