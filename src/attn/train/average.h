// Checkpoint averaging: the element-wise mean of several model files of the
// same model (e.g. the last N epochs' snapshots of a run), which usually
// translates better than any one of them (Vaswani et al. 2017; Marian's and
// fairseq's "average checkpoints").
#pragma once
#include <string>
#include <vector>

#include "attn/tensor/safetensors.h"

namespace attn::train {

// Reads every file in `paths` (safetensors, F32) and returns a file holding,
// for each tensor name, the mean of that tensor over all files, in the first
// file's order and with the first file's metadata (the model config).
// Every file must hold the same names with the same shapes and the same
// "config" metadata; otherwise throws std::runtime_error naming the file
// and the tensor or field that differs. Throws std::invalid_argument when
// `paths` is empty.
SafetensorsFile average_model_files(const std::vector<std::string>& paths);

}  // namespace attn::train
