// The fused Luong search step (see the header): the prepared weights, the
// phases of a step and their buffers.
#include "attn/models/luong/luong_search.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "attn/attention/attention.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/luong_rows.h"
#include "attn/kernels/rnn_gates.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/models/rnn/decoder_cell.h"
#include "attn/models/luong/luong_loop.h"
#include "attn/models/model_parts.h"
#include "attn/models/step_logits.h"
#include "attn/tensor/kernels.h"

namespace attn::models {
namespace {


struct LuongPrepared final : PreparedDecoder {
  int64_t V = 0, E = 0, Hd = 0, G = 0, L = 0, Dv = 0, A = 0;
  CellType cell = CellType::Lstm;
  LuongScore score = LuongScore::General;
  LuongWindow window = LuongWindow::Global;
  int64_t half_width = 0;
  bool folded = false;
  Tensor table;                 // folded: [V, G] = E W_ih0[:, :E]^T + b_ih0
  Tensor embed;                 // unfolded: [V, E]
  nn::StepLinear ie;            // unfolded: W_ih0[:, :E]
  nn::StepLinear feed;          // W_ih0[:, E:] (h̃)
  std::vector<nn::StepLinear> ih, hh;  // ih[l] for l >= 1
  std::vector<Tensor> b_ih, b_hh;      // [G] each (b_ih[0]: zeros when folded, the table holds it)
  nn::StepLinear q, wp, wcc, wch, y;   // W_q (concat), W_p (local-p), W_c's columns, W_s
  Tensor v, vp, w_s, b_s;              // [A], [A], [V, Hd] (y's source), [V] or undefined
};

using detail::fits;

void check_weights(const LuongStepWeights& w) {
  const LuongLoopWeights& l = w.loop;
  bool ok = w.embed.defined() && w.embed.dim() == 2 && w.w_s.defined() && w.w_s.dim() == 2 && !l.layers.empty() &&
            l.combine.defined() && l.combine.dim() == 2 && l.layers[0].weight_hh.defined();
  if (ok) {
    const int64_t V = w.embed.size(0), E = w.embed.size(1), Hd = w.w_s.size(1),
                  G = detail::gate_count(l.cell) * Hd;
    ok = fits(w.w_s, {V, Hd}) && (!w.b_s.defined() || fits(w.b_s, {V})) && l.combine.size(0) == Hd &&
         l.combine.size(1) > Hd;
    for (size_t i = 0; ok && i < l.layers.size(); ++i)
      ok = fits(l.layers[i].weight_ih, {G, i == 0 ? E + Hd : Hd}) && fits(l.layers[i].weight_hh, {G, Hd});
    if (ok && l.score == LuongScore::Concat) ok = l.concat_q.defined() && l.concat_q.size(1) == Hd;
    if (ok && l.window == LuongWindow::LocalP) ok = l.local_wp.defined() && l.local_wp.size(1) == Hd;
  }
  if (!ok)
    throw std::invalid_argument("luong decoder: embed " + shape_str(w.embed) + ", w_s " + shape_str(w.w_s) +
                                ", W_c " + shape_str(l.combine) + ", layer 0 W_ih " +
                                shape_str(l.layers.empty() ? Tensor() : l.layers[0].weight_ih) +
                                " (expects embed [V, E], w_s [V, Hd], W_c [Hd, Dv + Hd], W_ih [G, E + Hd] then "
                                "[G, Hd], W_hh [G, Hd], W_q / W_p [A, Hd])");
}


}  // namespace

std::shared_ptr<const PreparedDecoder> prepare_luong_decoder(const LuongStepWeights& w, StepLayout layout) {
  check_weights(w);
  const LuongLoopWeights& l = w.loop;
  auto p = std::make_shared<LuongPrepared>();
  const bool packed = layout.packed;
  const nn::StepWeightType type = layout.type;
  p->V = w.embed.size(0), p->E = w.embed.size(1), p->Hd = w.w_s.size(1), p->cell = l.cell;
  p->G = detail::gate_count(l.cell) * p->Hd, p->L = int64_t(l.layers.size()), p->Dv = l.combine.size(1) - p->Hd;
  p->score = l.score, p->window = l.window, p->half_width = l.half_width;
  p->A = l.score == LuongScore::Concat ? l.concat_q.size(0) : (l.local_wp.defined() ? l.local_wp.size(0) : 0);
  const int64_t V = p->V, E = p->E, Hd = p->Hd, G = p->G;
  for (int64_t i = 0; i < p->L; ++i) {
    const RnnWeights& r = l.layers[size_t(i)];
    p->ih.push_back(i == 0 ? nn::StepLinear() : nn::StepLinear(detail::detached_copy(r.weight_ih), packed, type));
    p->hh.emplace_back(detail::detached_copy(r.weight_hh), packed, type);
    p->b_ih.push_back(or_zeros(r.bias_ih, {G}).detach().clone());
    p->b_hh.push_back(or_zeros(r.bias_hh, {G}).detach().clone());
  }
  p->feed = nn::StepLinear(detail::columns(l.layers[0].weight_ih, E, Hd), packed, type);
  p->folded = V * G <= kMaxFoldedFloats;
  if (p->folded) {  // T = E W_ih0[:, :E]^T + b_ih0: one GEMM over the vocabulary
    p->table = Tensor::empty({V, G});
    for (int64_t r = 0; r < V; ++r)
      std::memcpy(p->table.data() + r * G, p->b_ih[0].data(), size_t(G) * sizeof(float));
    kernels::gemm(false, true, V, G, E, 1.0f, w.embed.data(), E, l.layers[0].weight_ih.data(), E + Hd, 1.0f,
                  p->table.data(), G);
    p->b_ih[0] = Tensor::zeros({G});
  } else {
    p->embed = detail::detached_copy(w.embed);
    p->ie = nn::StepLinear(detail::columns(l.layers[0].weight_ih, 0, E), packed, type);
  }
  if (l.score == LuongScore::Concat)
    p->q = nn::StepLinear(detail::detached_copy(l.concat_q), packed, type), p->v = detail::detached_copy(l.concat_v);
  if (l.window == LuongWindow::LocalP)
    p->wp = nn::StepLinear(detail::detached_copy(l.local_wp), packed, type), p->vp = detail::detached_copy(l.local_vp);
  p->wcc = nn::StepLinear(detail::columns(l.combine, 0, p->Dv), packed, type);
  p->wch = nn::StepLinear(detail::columns(l.combine, p->Dv, Hd), packed, type);
  p->w_s = detail::detached_copy(w.w_s);
  p->y = nn::StepLinear(p->w_s, packed, type);
  p->b_s = detail::detached_copy(w.b_s);
  return p;
}

namespace {

// One step's arguments, as the phases read them.
struct StepCall {
  int64_t N = 0;
  const int64_t* rows = nullptr;  // [N] row -> sentence
  const int* prev = nullptr;      // [N] previous tokens
  int64_t t = 0;                  // the step number (local-m centres its window on it)
  // the state's buffers, updated in place: h[l], c[l] (LSTM) [N, Hd] per layer, feed h̃ [N, Hd]
  std::vector<float*> h, c;
  float* feed = nullptr;
};

class LuongStepDecoder final : public StepDecoder {
public:
  LuongStepDecoder(std::shared_ptr<const LuongPrepared> p, const EncoderMemory& m, int64_t max_rows);
  const StepTop& step(const std::vector<int64_t>& rows, DecoderState& state, const std::vector<int>& prev, int64_t k,
                      int64_t t) override;
  void report_attention(const std::string& map) override {
    attention_map_ = detail::check_one_attention_map("luong", map);
  }
  void restrict_vocabulary(const std::vector<int>& tokens) override { logits_.restrict(tokens); }

private:
  void check(const std::vector<int64_t>& rows, const DecoderState& state, const std::vector<int>& prev,
             int64_t k) const;
  void reserve(int64_t rows);
  // The phases, called by every thread of the step's parallel region (each an omp for).
  void start_rows(const StepCall& c);
  void layer_products(const StepCall& c, int64_t l);
  void cell_rows(const StepCall& c, int64_t l);
  void attention_products(const StepCall& c);
  void attend_rows(const StepCall& c);
  void combine(const StepCall& c);

  // layer l's h: the previous one until its cell runs, then the new one (in place)
  float* h_of(const StepCall& c, int64_t l) const { return c.h[size_t(l)]; }

  std::shared_ptr<const LuongPrepared> p_;
  Tensor keys_, values_;
  std::vector<int64_t> len_;  // [B] source lengths
  int64_t B_, S_, K_;
  int64_t macs_per_row_;
  int64_t cap_ = 0;  // rows the buffers hold
  Tensor xe_, gx_, gh_, tanh_c_, qp_, ctx_, a_, weights_;  // xe_: embeddings (unfolded only)
  detail::StepLogits logits_;
  nn::StepInput in_x_, in_h_, in_e_, in_c_;  // the products' inputs in their type's form (luong_search.cpp)
  StepTop out_;
};

LuongStepDecoder::LuongStepDecoder(std::shared_ptr<const LuongPrepared> p, const EncoderMemory& m, int64_t max_rows)
    : p_(std::move(p)), keys_(m.keys()), values_(m.values()),
      logits_(&p_->y, p_->b_s.defined() ? p_->b_s.data() : nullptr, p_->w_s) {
  const LuongPrepared& q = *p_;
  const bool ok = keys_.defined() && values_.defined() && keys_.dim() == 3 && values_.dim() == 3 &&
                  values_.size(0) == keys_.size(0) && values_.size(1) == keys_.size(1) && values_.size(2) == q.Dv &&
                  keys_.size(2) == (q.score == LuongScore::Concat ? q.A : q.Hd) && fits(m.lengths(), {keys_.size(0)});
  if (!ok)
    throw std::invalid_argument("luong decoder: keys " + shape_str(keys_) + ", values " + shape_str(values_) +
                                ", lengths " + shape_str(m.lengths()) + " (expects keys [B, S, " +
                                std::to_string(q.score == LuongScore::Concat ? q.A : q.Hd) + "], values [B, S, " +
                                std::to_string(q.Dv) + "], lengths [B])");
  B_ = keys_.size(0), S_ = keys_.size(1), K_ = keys_.size(2);
  len_ = lengths_in_range("luong decoder", "lengths", m.lengths(), S_);
  macs_per_row_ = q.L * q.G * 2 * q.Hd + q.Hd * (q.Dv + q.Hd) + q.V * q.Hd + S_ * (K_ + q.Dv) + 2 * q.A * q.Hd;
  reserve(std::max<int64_t>(1, max_rows));
}

void LuongStepDecoder::reserve(int64_t rows) {
  if (rows <= cap_) return;
  cap_ = rows;
  const LuongPrepared& p = *p_;
  if (!p.folded) xe_ = Tensor::empty({rows, p.E});
  gx_ = Tensor::empty({rows, p.G});
  gh_ = Tensor::empty({rows, p.G});
  tanh_c_ = Tensor::empty({rows, p.Hd});
  qp_ = Tensor::empty({rows, std::max<int64_t>(p.A, 1)});
  ctx_ = Tensor::empty({rows, p.Dv});
  a_ = Tensor::empty({rows, S_});
  weights_ = Tensor::empty({rows, S_});
}

void LuongStepDecoder::check(const std::vector<int64_t>& rows, const DecoderState& state,
                             const std::vector<int>& prev, int64_t k) const {
  const int64_t N = int64_t(rows.size()), L = p_->L, Hd = p_->Hd;
  const bool lstm = p_->cell == CellType::Lstm;
  const size_t want = size_t(L * (lstm ? 2 : 1) + 1);
  auto fits_state = [&](const std::string& name) {
    return state.has(name) && state.buffer(name).dim() == 2 && state.buffer(name).size(1) == Hd;
  };
  bool ok = state.buffers().size() == want && state.rows() == N && int64_t(prev.size()) == N && fits_state(luong_state::kFeed);
  for (int64_t l = 0; ok && l < L; ++l) ok = fits_state(luong_state::h(l)) && (!lstm || fits_state(luong_state::c(l)));
  if (!ok)
    throw std::invalid_argument("luong decoder step: expects the state from encode()/step() (" +
                                std::to_string(want) + " tensors of N = " + std::to_string(N) + " rows) and prev [N]");
  detail::check_step_rows("luong", rows, prev, k, B_, p_->V);
}

// 1. layer 0's gates start from the previous token's table row (unfolded: its bias; the embedding into xe)
void LuongStepDecoder::start_rows(const StepCall& c) {
  const LuongPrepared& p = *p_;
  const int64_t G = p.G, E = p.E;
#pragma omp for schedule(dynamic, 16)
  for (int64_t i = 0; i < c.N; ++i) {
    const int64_t y = c.prev[i];
    if (p.folded) {
      std::memcpy(gx_.data() + i * G, p.table.data() + y * G, size_t(G) * sizeof(float));
    } else {
      std::memset(gx_.data() + i * G, 0, size_t(G) * sizeof(float));
      std::memcpy(xe_.data() + i * E, p.embed.data() + y * E, size_t(E) * sizeof(float));
    }
  }
}

// 2. layer l's products, one loop over their columns: gx (+)= x W_ih^T (layer 0: the h̃ and,
// unfolded, the embedding columns; above: h^{l-1}'), gh = h^l W_hh^T
void LuongStepDecoder::layer_products(const StepCall& c, int64_t l) {
  const LuongPrepared& p = *p_;
  const int64_t N = c.N, Hd = p.Hd, G = p.G, E = p.E;
  const nn::StepLinear& in = l == 0 ? p.feed : p.ih[size_t(l)];
  const float* x = l == 0 ? c.feed : h_of(c, l - 1);  // h̃ (not yet updated), h^{l-1}' (updated)
  const int64_t ui = in.units(), uh = ui + p.hh[size_t(l)].units(),
                ue = uh + (l == 0 && !p.folded ? p.ie.units() : 0);
  const nn::StepWeightType type = in.type();
  const nn::StepRows xr = nn::shared_rows(in_x_, type, N, Hd, x, Hd);
  const nn::StepRows hr = nn::shared_rows(in_h_, type, N, Hd, h_of(c, l), Hd);  // h^l before its cell
  const nn::StepRows er = ue > uh ? nn::shared_rows(in_e_, type, N, E, xe_.data(), E) : nn::StepRows{};
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < ue; ++u) {
    if (u < ui)
      in.apply(xr, u, u + 1, gx_.data(), G, l == 0);
    else if (u < uh)
      p.hh[size_t(l)].apply(hr, u - ui, u - ui + 1, gh_.data(), G);
    else
      p.ie.apply(er, u - uh, u - uh + 1, gx_.data(), G, true);
  }
}

// 3. layer l's cell over blocks of whole rows, h^l and c^l in place
void LuongStepDecoder::cell_rows(const StepCall& c, int64_t l) {
  constexpr int64_t kRows = 8;
  const LuongPrepared& p = *p_;
  const int64_t N = c.N, G = p.G, Hd = p.Hd;
  float* h = h_of(c, l);
#pragma omp for schedule(dynamic, 1)
  for (int64_t i0 = 0; i0 < N; i0 += kRows) {
    const int64_t n = std::min(kRows, N - i0);
    float* y[kRows];
    float* cr[kRows];
    for (int64_t j = 0; j < n; ++j) {
      y[j] = h + (i0 + j) * Hd;
      if (p.cell == CellType::Lstm) cr[j] = c.c[size_t(l)] + (i0 + j) * Hd;
    }
    if (p.cell == CellType::Gru) {
      rnn_kernels::GruForward a;
      a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
      a.gates = gx_.data() + i0 * G, a.gh = gh_.data() + i0 * G;
      a.b_ih = p.b_ih[size_t(l)].data(), a.b_hh = p.b_hh[size_t(l)].data();
      a.h_prev = h + i0 * Hd, a.y_rows = y, a.next_rows = y;
      rnn_kernels::gru_forward(a);  // ghn null: nothing kept for a backward
    } else {
      rnn_kernels::LstmForward a;
      a.n = n, a.hidden = Hd, a.k_begin = 0, a.k_end = Hd;
      a.gates = gx_.data() + i0 * G, a.gh = gh_.data() + i0 * G;
      a.b_ih = p.b_ih[size_t(l)].data(), a.b_hh = p.b_hh[size_t(l)].data();
      a.c_prev = c.c[size_t(l)] + i0 * Hd, a.tanh_c = tanh_c_.data() + i0 * Hd;
      a.y_rows = y, a.next_rows = y, a.c_rows = cr;
      rnn_kernels::lstm_forward(a);
    }
  }
}

// 4. the query side's products of the top layer's h: qp = h W_q^T (concat), u = h W_p^T (local-p)
void LuongStepDecoder::attention_products(const StepCall& c) {
  const LuongPrepared& p = *p_;
  const nn::StepLinear& lin = p.score == LuongScore::Concat ? p.q : p.wp;
  const nn::StepRows h = nn::shared_rows(in_h_, lin.type(), c.N, p.Hd, h_of(c, p.L - 1), p.Hd);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < lin.units(); ++u) lin.apply(h, u, u + 1, qp_.data(), p.A);
}

// 5. each row's weights and context over its sentence (its window: local-m around t, local-p around p)
void LuongStepDecoder::attend_rows(const StepCall& c) {
  const LuongPrepared& p = *p_;
  const int64_t S = S_, K = K_, Dv = p.Dv, Hd = p.Hd, A = p.A;
  const float* h = h_of(c, p.L - 1);
#pragma omp for schedule(dynamic, 4)
  for (int64_t i = 0; i < c.N; ++i) {
    const int64_t b = c.rows[i], L = len_[size_t(b)];
    const float *kb = keys_.data() + b * S * K, *vb = values_.data() + b * S * Dv;
    float *w = weights_.data() + i * S, *ctx = ctx_.data() + i * Dv;
    if (p.score == LuongScore::Concat) {
      rnnsearch_kernels::attend_row(qp_.data() + i * A, kb, p.v.data(), A, vb, Dv, L, S, w, ctx);
      continue;
    }
    luong_kernels::DotAttend k;
    std::pair<int64_t, int64_t> range{0, L};
    if (p.window == LuongWindow::LocalM) range = attention::window_range(double(c.t), p.half_width, L);
    if (p.window == LuongWindow::LocalP) {  // p = length sigmoid(v_p^T tanh(W_p h))
      float e = 0.0f;
      for (int64_t j = 0; j < A; ++j) e += p.vp.data()[j] * std::tanh(qp_.data()[i * A + j]);
      k.p = float(L) / (1.0f + std::exp(-e));
      range = attention::window_range(double(k.p), p.half_width, L);
    }
    k.K = K, k.Dv = Dv, k.S = S, k.lo = range.first, k.hi = range.second;
    k.q = h + i * Hd, k.keys = kb, k.values = vb;
    k.gauss = p.window == LuongWindow::LocalP, k.inv_two_sigma2 = detail::luong_inv_two_sigma2(p.half_width);
    k.a = a_.data() + i * S, k.w = w, k.c = ctx;
    luong_kernels::dot_attend(k);
  }
}

// 6. h̃' = tanh(W_c [c; h]), tanh on each unit's columns as they are done
void LuongStepDecoder::combine(const StepCall& c) {
  const LuongPrepared& p = *p_;
  const int64_t Hd = p.Hd;
  float* ht = c.feed;  // h̃ in place: layer 0 read the previous one before
  const nn::StepRows ctx = nn::shared_rows(in_c_, p.wcc.type(), c.N, p.Dv, ctx_.data(), p.Dv);
  const nn::StepRows h = nn::shared_rows(in_h_, p.wch.type(), c.N, Hd, h_of(c, p.L - 1), Hd);
#pragma omp for schedule(dynamic, 1)
  for (int64_t u = 0; u < p.wcc.units(); ++u) {
    p.wcc.apply(ctx, u, u + 1, ht, Hd);
    p.wch.apply(h, u, u + 1, ht, Hd, true);
    const int64_t c0 = u * nn::StepLinear::kUnit;
    rnnsearch_kernels::tanh_columns(ht, Hd, c.N, c0, c0 + p.wcc.unit_cols(u));
  }
}

const StepTop& LuongStepDecoder::step(const std::vector<int64_t>& rows, DecoderState& state,
                                      const std::vector<int>& prev, int64_t k, int64_t t) {
  check(rows, state, prev, k);
  const LuongPrepared& p = *p_;
  const int64_t N = int64_t(rows.size());
  reserve(N);
  StepCall c;
  c.N = N, c.rows = rows.data(), c.prev = prev.data(), c.t = t, c.feed = state.data(luong_state::kFeed);
  for (int64_t l = 0; l < p.L; ++l) {
    c.h.push_back(state.data(luong_state::h(l)));
    if (p.cell == CellType::Lstm) c.c.push_back(state.data(luong_state::c(l)));
  }
  const bool par = num_threads() > 1 && N * macs_per_row_ >= kParallelStepMacs;
  logits_.begin(N, k, par ? num_threads() : 1, out_);
  // one region, phases separated by the omp for barriers (see rnnsearch_search.cpp on dynamic chunks)
#pragma omp parallel if (par)
  {
    start_rows(c);
    for (int64_t l = 0; l < p.L; ++l) {
      layer_products(c, l);
      cell_rows(c, l);
    }
    if (p.score == LuongScore::Concat || p.window == LuongWindow::LocalP) attention_products(c);
    attend_rows(c);
    combine(c);
    logits_.tiles(c.feed, p.Hd, omp_get_thread_num());
    logits_.merge(omp_get_thread_num(), omp_get_num_threads(), out_);
  }
  // the weights stay in their buffer (the context needs them); a view of them only when asked
  out_.attention = attention_map_.empty() ? Tensor() : weights_.narrow0(0, N);
  return out_;
}

}  // namespace

std::unique_ptr<StepDecoder> make_luong_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                const EncoderMemory& memory, int64_t max_rows) {
  auto p = std::dynamic_pointer_cast<const LuongPrepared>(prepared);
  if (!p) throw std::invalid_argument("luong decoder: the prepared weights are not a luong decoder's");
  return std::make_unique<LuongStepDecoder>(std::move(p), memory, max_rows);
}

}  // namespace attn::models
