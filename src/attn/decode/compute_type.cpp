#include "attn/decode/compute_type.h"

#include "attn/cpu/isa.h"
#include "attn/nn/step_weight_types.h"

namespace attn::decode {

nn::StepWeightType compute_type(const std::string& name, const models::Seq2SeqModel& model) {
  const nn::StepWeightType t = name != "auto"       ? nn::step_weight_type(name)
                               : cpu::native_int8() ? nn::StepWeightType::I8
                               : cpu::native_bf16() ? nn::StepWeightType::BF16
                                                    : nn::StepWeightType::F32;
  if (model.searches_in(t)) return t;
  if (name == "auto") return nn::StepWeightType::F32;
  (void)model.prepare_decoder(1, t);  // throws, naming the model type
  return t;
}

}  // namespace attn::decode
