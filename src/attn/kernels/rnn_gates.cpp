// Gate kernels: one fused pass over [n, k_begin:k_end] per step (see
// kernels/rnn_gates.h for the equations); the hidden axis is a SIMD loop. An ISA
// source (kernels/dispatch.h): compiled once per instruction set.
#include "attn/kernels/rnn_gates.h"

#include "attn/simd/math.h"

namespace attn::rnn_kernels::ATTN_SIMD_ISA {
namespace {

// Save = false (inference): the gates and W_hn h + b_hn are not written back,
// 4 of the 13 row streams of a decoding step's gate pass.
template <class M, bool Save>
void gru_forward_impl(const GruForward& a) {
  const int64_t H = a.hidden, G = 3 * H;
  for (int64_t j = 0; j < a.n; ++j) {
    float* __restrict g = a.gates + j * G;
    const float* __restrict gh = a.gh + j * G;
    const float* __restrict bi = a.b_ih;
    const float* __restrict bh = a.b_hh;
    // hp and nx may be one row (a search's state, updated in place): not __restrict,
    // and each unit reads hp[k] before it writes nx[k]
    const float* hp = a.h_prev + j * H;
    float* __restrict hn_out = Save ? a.ghn + j * H : nullptr;
    float* __restrict y = a.y_rows[j];
    float* nx = a.next_rows[j];
#pragma omp simd
    for (int64_t k = a.k_begin; k < a.k_end; ++k) {
      float r = M::sigmoid(g[k] + bi[k] + gh[k] + bh[k]);
      float z = M::sigmoid(g[H + k] + bi[H + k] + gh[H + k] + bh[H + k]);
      float hn = gh[2 * H + k] + bh[2 * H + k];  // W_hn h + b_hn
      float nn = M::tanh(g[2 * H + k] + bi[2 * H + k] + r * hn);
      float h = nn + z * (hp[k] - nn);  // (1 - z) n + z h
      if constexpr (Save) {
        g[k] = r;
        g[H + k] = z;
        g[2 * H + k] = nn;
        hn_out[k] = hn;
      }
      y[k] = h;
      nx[k] = h;
    }
  }
}

void gru_backward_impl(const GruBackward& a) {
  const int64_t H = a.hidden, G = 3 * H;
  for (int64_t j = 0; j < a.n; ++j) {
    const float* __restrict g = a.gates + j * G;
    const float* __restrict hn = a.ghn + j * H;
    const float* __restrict hp = a.h_prev + j * H;
    const float* __restrict dy = a.dy_rows[j];
    float* __restrict dh = a.dh + j * H;
    float* __restrict dgx = a.dgx + j * G;
    float* __restrict dgh = a.dgh + j * G;
#pragma omp simd
    for (int64_t k = a.k_begin; k < a.k_end; ++k) {
      float r = g[k], z = g[H + k], nn = g[2 * H + k];
      float d = dh[k] + dy[k];
      // h' = (1 - z) n + z h
      float dn_pre = d * (1.0f - z) * (1.0f - nn * nn);  // n = tanh(.)
      float dz_pre = d * (hp[k] - nn) * z * (1.0f - z);  // z = sigmoid(.)
      // n = tanh(a_n + r * hn): d(hn-side) = dn_pre * r, dr = dn_pre * hn
      float dr_pre = dn_pre * hn[k] * r * (1.0f - r);
      dgx[k] = dr_pre;
      dgx[H + k] = dz_pre;
      dgx[2 * H + k] = dn_pre;
      dgh[k] = dr_pre;
      dgh[H + k] = dz_pre;
      dgh[2 * H + k] = dn_pre * r;
      dh[k] = d * z;  // direct path h -> h'
    }
  }
}

template <class M>
void lstm_forward_impl(const LstmForward& a) {
  const int64_t H = a.hidden, G = 4 * H;
  for (int64_t j = 0; j < a.n; ++j) {
    float* __restrict g = a.gates + j * G;
    const float* __restrict gh = a.gh + j * G;
    const float* __restrict bi = a.b_ih;
    const float* __restrict bh = a.b_hh;
    // cp and cn may be one row, and y and nx too (a search's state, updated in
    // place): not __restrict, and each unit reads cp[k] before it writes cn[k]
    const float* cp = a.c_prev + j * H;
    float* __restrict tc_out = a.tanh_c + j * H;
    float* y = a.y_rows[j];
    float* nx = a.next_rows[j];
    float* cn = a.c_rows[j];
#pragma omp simd
    for (int64_t k = a.k_begin; k < a.k_end; ++k) {
      float i = M::sigmoid(g[k] + bi[k] + gh[k] + bh[k]);
      float f = M::sigmoid(g[H + k] + bi[H + k] + gh[H + k] + bh[H + k]);
      float gg = M::tanh(g[2 * H + k] + bi[2 * H + k] + gh[2 * H + k] + bh[2 * H + k]);
      float o = M::sigmoid(g[3 * H + k] + bi[3 * H + k] + gh[3 * H + k] + bh[3 * H + k]);
      float c = f * cp[k] + i * gg;
      float tc = M::tanh(c);
      float h = o * tc;
      g[k] = i;
      g[H + k] = f;
      g[2 * H + k] = gg;
      g[3 * H + k] = o;
      tc_out[k] = tc;
      cn[k] = c;
      y[k] = h;
      nx[k] = h;
    }
  }
}

void lstm_backward_impl(const LstmBackward& a) {
  const int64_t H = a.hidden, G = 4 * H;
  for (int64_t j = 0; j < a.n; ++j) {
    const float* __restrict g = a.gates + j * G;
    const float* __restrict cp = a.c_prev + j * H;
    const float* __restrict tc = a.tanh_c + j * H;
    const float* __restrict dy = a.dy_rows[j];
    const float* __restrict dh = a.dh + j * H;
    float* __restrict dc = a.dc + j * H;
    float* __restrict dg = a.dgates + j * G;
#pragma omp simd
    for (int64_t k = a.k_begin; k < a.k_end; ++k) {
      float i = g[k], f = g[H + k], gg = g[2 * H + k], o = g[3 * H + k], t = tc[k];
      float d = dh[k] + dy[k];
      // h' = o tanh(c')
      float dct = dc[k] + d * o * (1.0f - t * t);
      // c' = f c + i g
      dg[k] = dct * gg * i * (1.0f - i);
      dg[H + k] = dct * cp[k] * f * (1.0f - f);
      dg[2 * H + k] = dct * i * (1.0f - gg * gg);
      dg[3 * H + k] = d * t * o * (1.0f - o);
      dc[k] = dct * f;
    }
  }
}

}  // namespace

void gru_forward(const GruForward& a, Math math) {
  const bool save = a.ghn != nullptr;
  if (math == Math::Fast)
    save ? gru_forward_impl<simd::FastMath, true>(a) : gru_forward_impl<simd::FastMath, false>(a);
  else
    save ? gru_forward_impl<simd::ExactMath, true>(a) : gru_forward_impl<simd::ExactMath, false>(a);
}

void gru_backward(const GruBackward& a) { gru_backward_impl(a); }

void lstm_forward(const LstmForward& a, Math math) {
  if (math == Math::Fast)
    lstm_forward_impl<simd::FastMath>(a);
  else
    lstm_forward_impl<simd::ExactMath>(a);
}

void lstm_backward(const LstmBackward& a) { lstm_backward_impl(a); }

}  // namespace attn::rnn_kernels::ATTN_SIMD_ISA
