// `attn score --ref FILE [--ref FILE ...] [--hyp FILE]`: corpus BLEU (sacreBLEU
// 13a) and chrF of detokenised hypotheses (stdin when --hyp is absent).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "attn/cli/commands.h"
#include "attn/data/line_reader.h"
#include "attn/data/utf8.h"
#include "attn/eval/bleu.h"
#include "attn/eval/chrf.h"

namespace attn::cli {

std::vector<std::string> read_stdin_lines() { return data::read_lines(stdin, "stdin"); }

void add_score_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("score", "corpus BLEU (sacreBLEU-compatible, 13a) and chrF of a translation");
  struct Opts {
    std::vector<std::string> refs;
    std::string hyp;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("-r,--ref", o->refs, "reference file(s), one segment a line (plain or gzip)")->required();
  cmd->add_option("--hyp", o->hyp, "hypothesis file (default: stdin)");
  cmd->add_flag("--json", o->json, "one JSON object instead of sacreBLEU's score lines");
  cmd->callback([o] {
    std::vector<std::string> hyps = o->hyp.empty() ? read_stdin_lines() : data::read_lines(o->hyp);
    std::vector<std::vector<std::string>> refs;
    for (const auto& r : o->refs) {
      refs.push_back(data::read_lines(r));
      if (refs.back().size() != hyps.size())
        throw std::invalid_argument(r + " has " + std::to_string(refs.back().size()) + " lines, the hypotheses " +
                                    std::to_string(hyps.size()) + " (" + (o->hyp.empty() ? "stdin" : o->hyp) + ")");
    }
    eval::BleuScore bleu = eval::corpus_bleu(hyps, refs);
    eval::ChrfScore chrf = eval::corpus_chrf(hyps, refs);
    if (o->json) {
      nlohmann::ordered_json j = {{"bleu", bleu.score},
                                  {"bleu_signature", eval::bleu_signature({}, bleu.num_refs)},
                                  {"bleu_verbose", bleu.format()},
                                  {"chrf", chrf.score},
                                  {"chrf_signature", eval::chrf_signature({}, chrf.num_refs)},
                                  {"segments", hyps.size()}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%s\n%s\n", bleu.format().c_str(), chrf.format().c_str());
      std::printf("signatures: BLEU %s | chrF %s\n", eval::bleu_signature({}, bleu.num_refs).c_str(),
                  eval::chrf_signature({}, chrf.num_refs).c_str());
    }
  });
}

}  // namespace attn::cli
