#include "attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn::testing {

std::vector<double> to_double(const Tensor& t) {
  if (!t.defined()) return {};
  return std::vector<double>(t.data(), t.data() + t.numel());
}

Tensor to_tensor(const std::vector<double>& x, const Shape& shape) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = float(x[size_t(i)]);
  return t;
}

namespace {
// softmax of e [n] in place, max-subtracted (in double too: exp(710) overflows)
void softmax_in_place(double* e, int64_t n) {
  if (n == 0) return;
  const double m = *std::max_element(e, e + n);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (e[j] = std::exp(e[j] - m));
  for (int64_t j = 0; j < n; ++j) e[j] /= sum;
}
}  // namespace

void additive_attend_row(const double* qp, const double* kp, const double* v, int64_t A, const double* h, int64_t Dv,
                         int64_t L, int64_t S, double* w, double* c) {
  for (int64_t j = 0; j < L; ++j) {
    double e = 0;
    for (int64_t a = 0; a < A; ++a) e += v[a] * std::tanh(qp[a] + kp[j * A + a]);
    w[j] = e;
  }
  softmax_in_place(w, L);
  std::fill(w + L, w + S, 0.0);
  std::fill(c, c + Dv, 0.0);
  for (int64_t j = 0; j < L; ++j)
    for (int64_t d = 0; d < Dv; ++d) c[d] += w[j] * h[j * Dv + d];
}

AdditiveReference additive_reference(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& W1,
                                     const Tensor& W2, const Tensor& bias, const Tensor& v,
                                     const std::vector<int64_t>& lengths, const Tensor& dcontext,
                                     const Tensor& dweights) {
  const int64_t B = query.size(0), Qd = query.size(1), Lk = keys.size(1), Dk = keys.size(2), Dv = values.size(2),
                A = v.size(0);
  const std::vector<double> q = to_double(query), K = to_double(keys), H = to_double(values), w1 = to_double(W1),
                            w2 = to_double(W2), bb = to_double(bias), vv = to_double(v), dc = to_double(dcontext),
                            dw = to_double(dweights);
  // forward: qp [B, A], kp [B, Lk, A], weights [B, Lk], context [B, Dv]
  std::vector<double> qp(size_t(B * A), 0.0), kp(size_t(B * Lk * A), 0.0), w(size_t(B * Lk)), c(size_t(B * Dv));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t i = 0; i < Qd; ++i) qp[size_t(b * A + a)] += w1[size_t(a * Qd + i)] * q[size_t(b * Qd + i)];
      for (int64_t j = 0; j < Lk; ++j) {
        double s = bb.empty() ? 0.0 : bb[size_t(a)];
        for (int64_t d = 0; d < Dk; ++d) s += w2[size_t(a * Dk + d)] * K[size_t((b * Lk + j) * Dk + d)];
        kp[size_t((b * Lk + j) * A + a)] = s;
      }
    }
  for (int64_t b = 0; b < B; ++b)
    additive_attend_row(&qp[size_t(b * A)], &kp[size_t(b * Lk * A)], vv.data(), A, &H[size_t(b * Lk * Dv)], Dv,
                        lengths[size_t(b)], Lk, &w[size_t(b * Lk)], &c[size_t(b * Dv)]);
  // backward of loss = sum(context * dcontext) + sum(weights * dweights)
  std::vector<double> dq(q.size(), 0.0), dK(K.size(), 0.0), dH(H.size(), 0.0), dw1(w1.size(), 0.0),
      dw2(w2.size(), 0.0), dbb(size_t(A), 0.0), dvv(size_t(A), 0.0), dqp(static_cast<size_t>(A));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = lengths[size_t(b)];
    std::vector<double> da(static_cast<size_t>(L));
    double dot = 0;  // sum_k w_k da_k
    for (int64_t j = 0; j < L; ++j) {
      double g = dw[size_t(b * Lk + j)];
      for (int64_t d = 0; d < Dv; ++d) {
        g += dc[size_t(b * Dv + d)] * H[size_t((b * Lk + j) * Dv + d)];
        dH[size_t((b * Lk + j) * Dv + d)] = w[size_t(b * Lk + j)] * dc[size_t(b * Dv + d)];
      }
      da[size_t(j)] = g;
      dot += w[size_t(b * Lk + j)] * g;
    }
    std::fill(dqp.begin(), dqp.end(), 0.0);
    for (int64_t j = 0; j < L; ++j) {
      const double de = w[size_t(b * Lk + j)] * (da[size_t(j)] - dot);
      for (int64_t a = 0; a < A; ++a) {
        const double t = std::tanh(qp[size_t(b * A + a)] + kp[size_t((b * Lk + j) * A + a)]);
        const double dz = de * vv[size_t(a)] * (1.0 - t * t);
        dvv[size_t(a)] += de * t;
        dqp[size_t(a)] += dz;
        dbb[size_t(a)] += dz;
        for (int64_t d = 0; d < Dk; ++d) {  // kp = W2 key + bias
          dK[size_t((b * Lk + j) * Dk + d)] += dz * w2[size_t(a * Dk + d)];
          dw2[size_t(a * Dk + d)] += dz * K[size_t((b * Lk + j) * Dk + d)];
        }
      }
    }
    for (int64_t a = 0; a < A; ++a)  // qp = W1 query
      for (int64_t i = 0; i < Qd; ++i) {
        dq[size_t(b * Qd + i)] += dqp[size_t(a)] * w1[size_t(a * Qd + i)];
        dw1[size_t(a * Qd + i)] += dqp[size_t(a)] * q[size_t(b * Qd + i)];
      }
  }
  AdditiveReference r;
  r.context = to_tensor(c, {B, Dv});
  r.weights = to_tensor(w, {B, Lk});
  r.dquery = to_tensor(dq, query.shape());
  r.dkeys = to_tensor(dK, keys.shape());
  r.dvalues = to_tensor(dH, values.shape());
  r.dW1 = to_tensor(dw1, W1.shape());
  r.dW2 = to_tensor(dw2, W2.shape());
  r.dbias = to_tensor(dbb, {A});
  r.dv = to_tensor(dvv, {A});
  return r;
}

bool reference_dropout_keeps(uint64_t seed, float p, int64_t row, int64_t j) {
  // MurmurHash3's 32-bit finaliser
  auto fmix = [](uint32_t x) {
    x = (x ^ (x >> 16)) * 0x85ebca6bu;
    x = (x ^ (x >> 13)) * 0xc2b2ae35u;
    return x ^ (x >> 16);
  };
  const uint64_t r = uint64_t(row);
  const uint32_t seed_lo = uint32_t(seed & 0xffffffffu), seed_hi = uint32_t(seed >> 32);
  const uint32_t row_lo = uint32_t(r & 0xffffffffu), row_hi = uint32_t(r >> 32);
  const uint32_t k1 = fmix((row_lo * 0x9e3779b1u) ^ seed_lo);
  const uint32_t key = fmix(k1 ^ (row_hi * 0x7feb352du) ^ seed_hi);
  const uint32_t draw = fmix(key + uint32_t(j) * 0x85ebca77u) >> 8;  // a 24-bit uniform
  const uint32_t threshold = uint32_t(double(p) * 16777216.0);       // p of 2^24: dropped below it
  return draw >= threshold;
}

namespace {
// keep[b, h, i, j] with keep broadcast right-aligned to [B, H, Lq, Lk]
double keep_at(const Tensor& keep, int64_t b, int64_t h, int64_t i, int64_t j) {
  const int64_t idx[4] = {b, h, i, j};
  const int nd = int(keep.dim());
  int64_t off = 0, stride = 1;
  for (int ax = 3; ax >= 4 - nd; --ax) {
    const int64_t n = keep.shape()[nd - 4 + ax];
    off += (n == 1 ? 0 : idx[ax]) * stride;
    stride *= n;
  }
  return keep.data()[off];
}
}  // namespace

SdpaReference sdpa_reference(const Tensor& q, const Tensor& k, const Tensor& v, double scale, const SdpaMask& mask,
                             float dropout, uint64_t seed, const Tensor& dout) {
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), D = q.size(3), Dv = v.size(3);
  const std::vector<double> Q = to_double(q), K = to_double(k), V = to_double(v), dO = to_double(dout);
  std::vector<double> O(size_t(B * H * Lq * Dv), 0.0), dQ(Q.size(), 0.0), dK(K.size(), 0.0), dV(V.size(), 0.0);
  std::vector<double> s(static_cast<size_t>(Lk)), m(static_cast<size_t>(Lk)), dp(static_cast<size_t>(Lk));
  std::vector<char> vis(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t qo = (b * H + h) * Lq, ko = (b * H + h) * Lk;
      const int64_t len = mask.key_lengths.empty() ? Lk : mask.key_lengths[size_t(b)];
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qi = &Q[size_t((qo + i) * D)];
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Lk; ++j) {
          vis[size_t(j)] = j < len && (!mask.causal || j <= i) && (!mask.keep.defined() || keep_at(mask.keep, b, h, i, j) != 0);
          double d = 0;
          for (int64_t x = 0; x < D; ++x) d += qi[x] * K[size_t((ko + j) * D + x)];
          s[size_t(j)] = scale * d;
          if (vis[size_t(j)]) mx = std::max(mx, s[size_t(j)]);
          m[size_t(j)] = dropout > 0 && !reference_dropout_keeps(seed, dropout, qo + i, j) ? 0.0 : 1.0 / (1.0 - dropout);
        }
        double sum = 0;
        for (int64_t j = 0; j < Lk; ++j) sum += (s[size_t(j)] = vis[size_t(j)] ? std::exp(s[size_t(j)] - mx) : 0.0);
        for (int64_t j = 0; j < Lk; ++j) s[size_t(j)] = sum > 0 ? s[size_t(j)] / sum : 0.0;  // P
        // out_i = sum_j P_ij M_ij v_j;  dP_ij = M_ij dO_i . v_j;  dv_j += P_ij M_ij dO_i
        const double* doi = &dO[size_t((qo + i) * Dv)];
        double dot = 0;  // sum_j P_ij dP_ij
        for (int64_t j = 0; j < Lk; ++j) {
          const double pm = s[size_t(j)] * m[size_t(j)];
          double g = 0;
          for (int64_t x = 0; x < Dv; ++x) {
            O[size_t((qo + i) * Dv + x)] += pm * V[size_t((ko + j) * Dv + x)];
            dV[size_t((ko + j) * Dv + x)] += pm * doi[x];
            g += doi[x] * V[size_t((ko + j) * Dv + x)];
          }
          dp[size_t(j)] = m[size_t(j)] * g;
          dot += s[size_t(j)] * dp[size_t(j)];
        }
        // dS_ij = P_ij (dP_ij - dot);  dq_i += scale dS_ij k_j;  dk_j += scale dS_ij q_i
        for (int64_t j = 0; j < Lk; ++j) {
          const double ds = s[size_t(j)] * (dp[size_t(j)] - dot) * scale;
          if (ds == 0) continue;
          for (int64_t x = 0; x < D; ++x) {
            dQ[size_t((qo + i) * D + x)] += ds * K[size_t((ko + j) * D + x)];
            dK[size_t((ko + j) * D + x)] += ds * qi[x];
          }
        }
      }
    }
  return {to_tensor(O, {B, H, Lq, Dv}), to_tensor(dQ, q.shape()), to_tensor(dK, k.shape()), to_tensor(dV, v.shape())};
}

}  // namespace attn::testing
