// The element type a decoding request names (`--compute`, the Python
// Translator's `compute=`) resolved for one model: what `auto` means on this
// CPU, and a type the model cannot search in refused by name.
#pragma once
#include <string>

#include "attn/models/seq2seq.h"
#include "attn/nn/step_weight_type.h"

namespace attn::decode {

// fp32 | int8 | bf16 | auto for `model`; auto: the fastest this CPU runs
// natively (int8 with VNNI, else bf16 with AVX-512 BF16, else fp32; `attn
// --version` says which), or fp32 for a model whose search is fp32 only (a
// kind without a search step of its own; every built-in kind, the captioner
// included, searches in all three). A type named outright that the model
// cannot search in throws std::invalid_argument naming the model type; an
// unknown name throws std::invalid_argument naming it.
nn::StepWeightType compute_type(const std::string& name, const models::Seq2SeqModel& model);

}  // namespace attn::decode
