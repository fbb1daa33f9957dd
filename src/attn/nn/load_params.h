// Parameters loaded by name from a safetensors file: model files, checkpoints
// (train/checkpoint.h) and trained run directories (decode/model_dir.h).
#pragma once
#include "attn/nn/module.h"
#include "attn/tensor/safetensors.h"

namespace attn::nn {

// Copies file's tensors into `params` by name, in place (the tensors keep their
// identity, so an optimizer holding them stays valid). Strict: every name of
// `params` present, no other tensor in the file, equal shapes, F32 (the loader
// accepts only F32), every value finite (no NaN or Inf). Everything is checked before anything is copied; on a
// mismatch throws std::runtime_error "<file>: cannot load: ..." listing each
// problem: missing tensor 'x' (expected shape [..]), unexpected tensor 'y',
// tensor 'z': expected shape [a, b], found [c, d], tensor 'w' holds a
// non-finite value (nan) at element i.
void load_into_params(const SafetensorsFile& file, const NamedTensors& params);

// load_into_params in two halves, for a loader that validates several files
// before it changes anything: the checks (throwing as above), then the copy.
void check_params(const SafetensorsFile& file, const NamedTensors& params);
void copy_params(const SafetensorsFile& file, const NamedTensors& params);

}  // namespace attn::nn
