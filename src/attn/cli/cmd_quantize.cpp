// `attn quantize RUN -o OUT --type int8|bf16 [--weights FILE]`: a run directory
// whose model file holds its weights in int8 (every 2-D weight per output row,
// symmetric, with its F32 scales) or bf16 (tensor/safetensors.h), about a
// quarter (int8) or half (bf16) of the fp32 file. The vocabularies and configs
// are copied beside it, so every command reads OUT as it reads RUN (the loaders
// widen the weights back to fp32; `--compute int8` then quantises them again
// to the same values). The type is recorded in the file's metadata
// ("weight_type"); OUT may not be RUN.
#include <cstdio>
#include <filesystem>

#include "attn/cli/commands.h"
#include "attn/tensor/safetensors.h"

namespace attn::cli {

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "write a run's model in int8 or bf16 (a smaller file, the same loaders)");
  struct Opts {
    std::string run, weights, out, type = "int8";
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("run", o->run, "run directory written by `attn train`")->required();
  cmd->add_option("-o,--output", o->out, "the new run directory (created; files of the same names replaced)")->required();
  cmd->add_option("--type", o->type, "int8 (2-D weights per output row, the rest fp32) or bf16 (every tensor)")
      ->capture_default_str()
      ->check(CLI::IsMember({"int8", "bf16"}));
  cmd->add_option("--weights", o->weights, "weights file instead of RUN/model.safetensors");
  cmd->callback([o] {
    namespace fs = std::filesystem;
    const fs::path run(o->run), out(o->out);
    if (fs::exists(out) && fs::equivalent(run, out))
      throw std::invalid_argument("quantize: -o " + o->out + " is the run itself (its fp32 model would be replaced)");
    const std::string weights = o->weights.empty() ? (run / "model.safetensors").string() : o->weights;
    SafetensorsFile f = load_safetensors(weights);
    if (!f.metadata.count("config")) throw std::runtime_error(weights + ": no model config in the file's metadata");
    fs::create_directories(out);
    for (const char* name : {"config.json", "train_config.json", "vocab.src.model", "vocab.tgt.model", "shortlist.tsv"})
      if (fs::exists(run / name)) fs::copy_file(run / name, out / name, fs::copy_options::overwrite_existing);
    f.metadata["weight_type"] = o->type;
    const std::string target = (out / "model.safetensors").string();
    save_safetensors(target, f.tensors, f.metadata, o->type == "int8" ? WeightFileType::I8 : WeightFileType::BF16);
    const auto before = fs::file_size(weights), after = fs::file_size(target);
    std::printf("%s: %s weights, %ju bytes (%.1f%% of %s, %ju bytes)\n", target.c_str(), o->type.c_str(),
                std::uintmax_t(after), 100.0 * double(after) / double(before), weights.c_str(), std::uintmax_t(before));
  });
}

}  // namespace attn::cli
