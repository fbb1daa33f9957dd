// `attn caption`: image captioning. Its subcommands so far handle data:
// `data` generates attn's captioning data set, `sheet` draws a contact sheet of
// any Karpathy-style corpus (cmd_caption_data.cpp). The captioning model will
// add its own options here (`attn caption -m RUN IMAGE...`).
#include "attn/cli/commands.h"

namespace attn::cli {

CLI::App* add_caption_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("caption", "image captioning: generate a data set (data), look at one (sheet)");
  cmd->require_subcommand(1);
  return cmd;
}

}  // namespace attn::cli
