// The Transformer's search weights (see the header).
#include "attn/models/transformer/transformer_prepared.h"

#include <cmath>

#include "attn/cpu/threading.h"
#include "attn/models/transformer/transformer.h"

namespace attn::models {

PreparedLinear prepare_rows(const Tensor& w, const Tensor& b, int64_t r0, int64_t n, int64_t scaled, float scale,
                            StepLayout layout) {
  PreparedLinear p;
  p.w = w.detach().narrow0(r0, n).clone();
  p.b = b.defined() ? b.detach().narrow0(r0, n).clone() : Tensor::zeros({n});
  const int64_t in = p.w.size(1);
  for (float *x = p.w.data(), *e = x + scaled * in; x != e; ++x) *x *= scale;
  for (float *x = p.b.data(), *e = x + scaled; x != e; ++x) *x *= scale;
  p.lin = nn::StepLinear(p.w, layout.packed, layout.type);
  return p;
}

Tensor apply(const PreparedLinear& p, nn::StepInput& in, const Tensor& x, const kernels::activation::Kind* act) {
  const int64_t N = x.size(0), out = p.lin.out();
  Tensor y = Tensor::empty({N, out});
  nn::apply_all(p.lin, in, N, x.data(), x.size(1), y.data(), out, false);
  if (act) {
    kernels::activation::bias_act(*act, y.data(), y.data(), p.b.data(), N, out);
    return y;
  }
  const float* b = p.b.data();
#pragma omp parallel for if (N * out > kParallelGrain)
  for (int64_t i = 0; i < N; ++i) {
    float* r = y.data() + i * out;
#pragma omp simd
    for (int64_t j = 0; j < out; ++j) r[j] += b[j];
  }
  return y;
}

namespace {

PreparedDecoderLayer prepare_decoder_layer(const nn::TransformerDecoderLayer& d, int64_t E, int64_t H,
                                           StepLayout layout) {
  const float q_scale = 1.0f / std::sqrt(float(E / H));
  const nn::MultiHeadAttention &sa = *d.self_attn, &ca = *d.multihead_attn;
  PreparedDecoderLayer p;
  p.qkv_self = prepare_rows(sa.in_proj_weight, sa.in_proj_bias, 0, 3 * E, E, q_scale, layout);
  p.out_self = prepare_rows(sa.out_proj_weight, sa.out_proj_bias, 0, E, 0, 1.0f, layout);
  p.q_cross = prepare_rows(ca.in_proj_weight, ca.in_proj_bias, 0, E, E, q_scale, layout);
  p.out_cross = prepare_rows(ca.out_proj_weight, ca.out_proj_bias, 0, E, 0, 1.0f, layout);
  p.ff1 = prepare_rows(d.linear1->weight, d.linear1->bias, 0, d.linear1->weight.size(0), 0, 1.0f, layout);
  p.ff2 = prepare_rows(d.linear2->weight, d.linear2->bias, 0, d.linear2->weight.size(0), 0, 1.0f, layout);
  return p;
}

PreparedEncoderLayer prepare_encoder_layer(const nn::TransformerEncoderLayer& l, int64_t E, StepLayout layout) {
  const nn::MultiHeadAttention& sa = *l.self_attn;
  PreparedEncoderLayer p;
  p.qkv = prepare_rows(sa.in_proj_weight, sa.in_proj_bias, 0, 3 * E, 0, 1.0f, layout);
  p.out = prepare_rows(sa.out_proj_weight, sa.out_proj_bias, 0, E, 0, 1.0f, layout);
  p.ff1 = prepare_rows(l.linear1->weight, l.linear1->bias, 0, l.linear1->weight.size(0), 0, 1.0f, layout);
  p.ff2 = prepare_rows(l.linear2->weight, l.linear2->bias, 0, l.linear2->weight.size(0), 0, 1.0f, layout);
  return p;
}

}  // namespace

std::shared_ptr<const TransformerPrepared> prepare_transformer(const Transformer& model, int64_t max_rows,
                                                               nn::StepWeightType compute) {
  auto p = std::make_shared<TransformerPrepared>();
  p->model = &model;
  p->compute = compute;
  const StepLayout layout = step_layout(max_rows, compute);
  const int64_t E = model.config().embed;
  for (const auto& d : model.decoder_stack().layers) p->layers.push_back(prepare_decoder_layer(*d, E, model.section().heads, layout));
  if (compute != nn::StepWeightType::F32) {
    // the encoder's products have a batch's source positions as rows: many, so packed
    const StepLayout encoder_layout = step_layout(kPackRows, compute);
    for (const auto& l : model.encoder_stack().layers) p->encoder.push_back(prepare_encoder_layer(*l, E, encoder_layout));
    for (const auto& d : model.decoder_stack().layers)
      p->cross_kv.push_back(prepare_rows(d->multihead_attn->in_proj_weight, d->multihead_attn->in_proj_bias, E, 2 * E,
                                         0, 1.0f, encoder_layout));
  }
  const Seq2SeqModel::OutputLayer o = model.output_layer();
  p->w_y = o.weight.detach().clone();
  p->b_y = o.bias.detach().clone();
  p->y = nn::StepLinear(p->w_y, layout.packed, layout.type);
  return p;
}

}  // namespace attn::models
