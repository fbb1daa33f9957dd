// `attn average -o OUT FILE...` or `attn average -m RUN_DIR --last N [-o OUT]`:
// checkpoint averaging (train/average.h). With --last, the N newest snapshots
// of a run (train.snapshots: true) are averaged into RUN_DIR/model.avgN.safetensors,
// which `attn translate -m RUN_DIR --weights ...` reads.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "attn/cli/commands.h"
#include "attn/train/average.h"

namespace attn::cli {

void add_average_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("average", "average model files (checkpoint averaging)");
  struct Opts {
    std::vector<std::string> files;
    std::string run_dir, out;
    int last = 0;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("files", o->files, "model files (.safetensors) to average");
  cmd->add_option("-m,--model", o->run_dir, "run directory whose snapshots/ to average (with --last)");
  cmd->add_option("--last", o->last, "average the newest N snapshots of --model");
  cmd->add_option("-o,--output", o->out, "output file (default with --last: RUN_DIR/model.avgN.safetensors)");
  cmd->callback([o] {
    namespace fs = std::filesystem;
    std::vector<std::string> files = o->files;
    if (!o->run_dir.empty()) {
      if (o->last < 1) throw std::invalid_argument("average: --model needs --last N (N >= 1)");
      const fs::path snaps = fs::path(o->run_dir) / "snapshots";
      if (!fs::is_directory(snaps))
        throw std::runtime_error(snaps.string() + ": no such folder (train with train.snapshots: true)");
      std::vector<std::string> all;
      for (const auto& e : fs::directory_iterator(snaps))
        if (e.path().extension() == ".safetensors") all.push_back(e.path().string());
      std::sort(all.begin(), all.end());  // step-NNNNNNN: zero-padded, so name order is step order
      if (int(all.size()) < o->last)
        throw std::runtime_error(snaps.string() + ": holds " + std::to_string(all.size()) + " snapshots, --last asks for " +
                                 std::to_string(o->last));
      files.insert(files.end(), all.end() - o->last, all.end());
      if (o->out.empty()) o->out = (fs::path(o->run_dir) / ("model.avg" + std::to_string(o->last) + ".safetensors")).string();
    }
    if (files.empty()) throw std::invalid_argument("average: give model files, or --model DIR --last N");
    if (o->out.empty()) throw std::invalid_argument("average: -o/--output is required with explicit files");
    SafetensorsFile avg = train::average_model_files(files);
    save_safetensors(o->out, avg.tensors, avg.metadata);
    std::printf("averaged %zu model files into %s\n", files.size(), o->out.c_str());
    for (const auto& f : files) std::printf("  %s\n", f.c_str());
  });
}

}  // namespace attn::cli
