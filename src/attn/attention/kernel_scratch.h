// Scratch memory for the attention kernels compiled per instruction set
// (kernels/dispatch.h) (internal header).
//
// Why a callback: how much a kernel needs can depend on the instruction set
// (head dims rounded up to whole vectors, batch rows padded to the lane count),
// which only the build that runs knows. A kernel asks at most once per call,
// before its parallel region, for all the floats it needs, and carves its
// buffers out of them: sizes and layout stay together in the kernel's source,
// and no second dispatch (a size query) could pick another build. The caller
// (glue, compiled for the baseline) hands out pooled tensor storage
// (detail::pooled_scratch, checks.h), so the kernels stay free of Tensor and of
// allocation.
#pragma once
#include <cstdint>

namespace attn::attention {

struct KernelScratch {
  // storage for `floats` floats, valid until the kernel returns (64-byte aligned
  // from the pool; the kernels need no alignment for correctness)
  float* (*get)(void* ctx, int64_t floats) = nullptr;
  void* ctx = nullptr;
};

}  // namespace attn::attention
