// attn: the command. Thin: parses options and calls the layers.
#include <CLI/CLI.hpp>
#include <iostream>

#include "attn/cli/checked_output.h"
#include "attn/cli/commands.h"
#include "attn/cpu/blas.h"
#include "attn/cpu/isa.h"

namespace {

// `attn --version`: the version, the instruction set the kernels run at, and the
// BLAS with its core type (what every speed figure depends on)
std::string version_text() {
  using namespace attn::cpu;
  std::string s = std::string("attn ") + ATTN_VERSION + "\n";
  s += std::string("instruction set: ") + isa_name(isa()) + " (CPU supports " + isa_name(detected_isa()) + ")\n";
  const std::string extra = feature_names();
  s += "dot-product instructions: " + (extra.empty() ? std::string("none") : extra) + "\n";
  s += std::string("--compute auto: ") + (native_int8() ? "int8" : native_bf16() ? "bf16" : "fp32") + "\n";
  try {
    const BlasInfo& b = blas_info();
    s += "BLAS: " + b.config + " from " + b.path;
    s += "\nBLAS core: " + (b.core.empty() ? std::string("unknown") : b.core) + ", chosen by " + b.coretype_source;
    if (!b.coretype_replaced.empty()) s += " (replaced OPENBLAS_CORETYPE=" + b.coretype_replaced + ")";
    if (!b.threading.empty()) s += ", " + b.threading + " threading";
  } catch (const std::exception& e) {
    s += std::string("BLAS: none (") + e.what() + ")";
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attn: attention models in C++ - train, run, and see the attention"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "print the version, instruction set and BLAS, and exit");
  app.add_option_function<std::string>(
         "--isa", [](const std::string& v) { attn::cpu::set_isa_cap(attn::cpu::parse_isa(v, "--isa")); },
         "cap the instruction set of attn's kernels (scalar, avx2, avx512; as ATTN_ISA)")
      ->configurable(false)
      ->trigger_on_parse();  // before --version reads it
  attn::cli::add_demo_command(app);
  attn::cli::add_vocab_command(app);
  attn::cli::add_train_command(app);
  attn::cli::add_translate_command(app);
  attn::cli::add_explain_command(app);
  attn::cli::add_score_command(app);
  attn::cli::add_average_command(app);
  attn::cli::add_quantize_command(app);
  attn::cli::add_shortlist_command(app);
  attn::cli::add_plot_command(app);
  attn::cli::add_serve_command(app);
  CLI::App* caption = attn::cli::add_caption_command(app);
  attn::cli::add_caption_data_commands(*caption);
  attn::cli::add_caption_eval_command(*caption);
  attn::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "attn: " << e.what() << "\n";
    return 1;
  }
  return attn::cli::stdout_written() ? 0 : 1;
}
