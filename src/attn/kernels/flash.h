// The fused scaled dot-product attention kernels (flash.h describes the
// algorithm, the legend and the layouts), compiled per instruction set and
// chosen at run time (kernels/dispatch.h): the inline functions below call the
// build for cpu::isa(). Raw pointers only; flash.cpp (forward, backward) is the
// glue that packs strided keys and values and provides the scratch memory.
#pragma once
#include "attn/attention/flash.h"
#include "attn/attention/kernel_scratch.h"
#include "attn/kernels/dispatch.h"

namespace attn::attention::flash::kernels {

// out [B, H, Lq, Dv] (layout p.lo), lse [B, H, Lq] contiguous (+inf for rows that
// see no key). Any layouts work; keys and values with contiguous rows (lk, lv of
// contiguous()) are the fast case. Asks `scratch` once, for threads x
// (D + Dv + 67) x BR floats (BR = 64 query lanes, 32 when Lq <= 32).
ATTN_ISA_DECLARE(void forward(const Problem& p, float* out, float* lse, const KernelScratch& scratch);)
inline void forward(const Problem& p, float* out, float* lse, const KernelScratch& scratch) {
  ATTN_ISA_CALL(forward, p, out, lse, scratch);
}

// dout [B, H, Lq, Dv] (layout p.lo) -> dq [B, H, Lq, D] (layout p.lq), dk [B, H, Lk, D]
// (layout ldk), dv [B, H, Lk, Dv] (layout ldv): keys and values are read through
// p.lk, p.lv, which may be a contiguous copy while the gradients go where the
// caller's tensors have them. Every element of those views is overwritten. out
// and lse are the forward's. Asks `scratch` once (per-thread blocks of packed
// queries and gradients, and the dQ partial sums when key ranges are split).
ATTN_ISA_DECLARE(void backward(const Problem& p, const Layout& ldk, const Layout& ldv, const float* out,
                               const float* dout, const float* lse, float* dq, float* dk, float* dv,
                               const KernelScratch& scratch);)
inline void backward(const Problem& p, const Layout& ldk, const Layout& ldv, const float* out, const float* dout,
                     const float* lse, float* dq, float* dk, float* dv, const KernelScratch& scratch) {
  ATTN_ISA_CALL(backward, p, ldk, ldv, out, dout, lse, dq, dk, dv, scratch);
}

}  // namespace attn::attention::flash::kernels
