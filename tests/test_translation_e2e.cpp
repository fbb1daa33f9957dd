// End to end: a toy translation task (word-by-word with the order reversed)
// through SentencePiece, training, checkpointing, decoding and BLEU; resume
// determinism; corpus and input errors surfacing through the `attn` command.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/cpu/threading.h"
#include "attn/data/line_reader.h"
#include "attn/data/toy_tasks.h"
#include "attn/decode/model_dir.h"
#include "attn/decode/translator.h"
#include "attn/eval/bleu.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/mt_trainer.h"
#include "attn/viz/heatmap.h"
#include "toy_run.h"
#include "train_test_util.h"

namespace attn::testing::translation_e2e_test {
namespace {

double bleu_of(const std::vector<decode::Translation>& tr, const std::vector<std::string>& refs) {
  std::vector<std::string> hyps;
  for (const auto& t : tr) hyps.push_back(t.hypotheses.empty() ? "" : t.hypotheses[0].text);
  return eval::corpus_bleu(hyps, {refs}).score;
}

TEST(TranslationE2E, ToyTaskTrainsTranslatesAndBeatsTheBleuFloor) {
  TempDir dir("mt_e2e");
  write_toy(dir.path, "train", 3000, 1);
  write_toy(dir.path, "valid", 100, 2);
  const data::ParallelCorpus test = data::reversal_corpus(100, 3);
  const std::string out = dir.path + "/run";
  train::TrainConfig cfg = train::parse_train_config(
      toy_config(dir.path, out, "  max_epochs: 5\n  valid_every: 0\n  log_every: 100\n  threads: 1\n"));
  std::vector<std::string> lines;
  train::RunOptions run;
  run.print = [&](const std::string& s) { lines.push_back(s); };
  train::TrainSummary sum = train::train_translation(cfg, run);
  EXPECT_TRUE(sum.completed);
  EXPECT_EQ(sum.stop_reason, "max_epochs");
  ASSERT_TRUE(sum.best_bleu.has_value());
  // the progress line carries step, epoch, loss, tokens/s, lr and ETA
  bool progress = false;
  for (const auto& l : lines)
    progress = progress || (l.find("step") == 0 && l.find("tgt tok/s") != std::string::npos &&
                            l.find("lr ") != std::string::npos && l.find("ETA") != std::string::npos);
  EXPECT_TRUE(progress);
  // one JSON line per progress line and per validation
  std::vector<std::string> log = data::read_lines(out + "/log.jsonl");
  int valid_lines = 0;
  for (const auto& l : log) valid_lines += l.find("\"type\":\"valid\"") != std::string::npos;
  EXPECT_EQ(valid_lines, 5);

  // the run directory alone translates the held-out test set
  decode::TranslationModel tm = decode::load_translation_model(out);
  decode::TranslateOptions o;
  o.search.beam = 1;
  const double greedy = bleu_of(decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, test.src, o), test.tgt);
  o.search.beam = 4;
  const double beam = bleu_of(decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, test.src, o), test.tgt);
  std::printf("toy task: best valid BLEU %.2f, test BLEU greedy %.2f, beam 4 %.2f\n", *sum.best_bleu, greedy, beam);
  EXPECT_GE(greedy, 80.0);
  EXPECT_GE(beam, 80.0);

  // the same network untrained cannot reach the floor
  Rng init(123);
  auto untrained = models::make_model(tm.model->config(), init, 1);
  untrained->train(false);
  o.search.beam = 1;
  const double before = bleu_of(decode::translate_lines(*untrained, *tm.src_vocab, *tm.tgt_vocab, test.src, o), test.tgt);
  EXPECT_LT(before, 10.0);

  // empty lines stay empty; others are translated in place
  auto tr = decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, {"one two three .", "", "  ", "red cat ."}, o);
  ASSERT_EQ(tr.size(), 4u);
  EXPECT_TRUE(tr[1].hypotheses.empty());
  EXPECT_TRUE(tr[2].hypotheses.empty());
  EXPECT_EQ(tr[0].hypotheses.at(0).text, "trois deux un .");
  EXPECT_FALSE(tr[3].hypotheses.empty());
  EXPECT_THROW(decode::translate_lines(*tm.model, *tm.src_vocab, *tm.tgt_vocab, {"ok", "bad \xff"}, o),
               std::invalid_argument);
}

// Stopping twice (once right after an epoch's last batch) and resuming gives
// bit-identical weights and optimizer state to one uninterrupted run, with
// dropout on (so the dropout Rng must be restored too); another seed differs.
TEST(TranslationE2E, StopAndResumeEqualsUninterrupted) {
  TempDir dir("mt_resume");
  write_toy(dir.path, "train", 400, 1);
  write_toy(dir.path, "valid", 30, 2);
  const std::string train_opts = "  max_steps: 30\n  max_epochs: 0\n  valid_every: 12\n  log_every: 5\n  threads: 2\n";
  auto config = [&](const std::string& out, const std::string& extra) {
    // two encoder layers: dropout between them must come from the checkpointed Rng too
    return train::parse_train_config(
        toy_config(dir.path, out, train_opts + extra, "  dropout: 0.2\n  encoder_layers: 2\n"));
  };
  train::RunOptions quiet;
  quiet.print = [](const std::string&) {};
  // how many batches an epoch has: stop the second run exactly there
  train::TrainSummary a = train::train_translation(config(dir.path + "/a", ""), quiet);
  ASSERT_TRUE(a.completed);
  ASSERT_EQ(a.steps, 30);
  ASSERT_GE(a.epoch, 1) << "the run should cross an epoch boundary";
  auto state_a = data::read_lines(dir.path + "/a/checkpoint/trainer_state.json");

  // batches per epoch from the plan: max_tokens 800 over 400 short pairs
  train::RunOptions stop = quiet;
  stop.stop_after_steps = 7;
  train::TrainSummary b1 = train::train_translation(config(dir.path + "/b", ""), stop);
  EXPECT_FALSE(b1.completed);
  EXPECT_EQ(b1.steps, 7);
  stop.resume = true;
  stop.stop_after_steps = 9;  // to step 16: past the validation at 12, mid-epoch 2 or later
  train::TrainSummary b2 = train::train_translation(config(dir.path + "/b", ""), stop);
  EXPECT_FALSE(b2.completed);
  EXPECT_EQ(b2.steps, 16);
  train::RunOptions resume = quiet;
  resume.resume = true;
  train::TrainSummary b3 = train::train_translation(config(dir.path + "/b", ""), resume);
  EXPECT_TRUE(b3.completed);
  EXPECT_EQ(b3.steps, 30);
  EXPECT_TRUE(same_tensors(dir.path + "/a/checkpoint/model.safetensors", dir.path + "/b/checkpoint/model.safetensors"));
  EXPECT_TRUE(same_tensors(dir.path + "/a/checkpoint/optimizer.safetensors",
                           dir.path + "/b/checkpoint/optimizer.safetensors"));
  EXPECT_TRUE(same_tensors(dir.path + "/a/model.safetensors", dir.path + "/b/model.safetensors"));
  EXPECT_EQ(a.best_bleu, b3.best_bleu);

  // negative control: another seed gives other weights
  train::TrainConfig other = config(dir.path + "/c", "  seed: 2\n");
  train::train_translation(other, quiet);
  EXPECT_FALSE(same_tensors(dir.path + "/a/checkpoint/model.safetensors", dir.path + "/c/checkpoint/model.safetensors"));

  // resuming a finished run changes nothing
  train::TrainSummary b4 = train::train_translation(config(dir.path + "/b", ""), resume);
  EXPECT_EQ(b4.steps, 30);
  EXPECT_TRUE(same_tensors(dir.path + "/a/checkpoint/model.safetensors", dir.path + "/b/checkpoint/model.safetensors"));

  // resuming needs a checkpoint; a fresh run refuses to overwrite one
  EXPECT_THROW(train::train_translation(config(dir.path + "/d", ""), resume), std::runtime_error);
  EXPECT_THROW(train::train_translation(config(dir.path + "/a", ""), quiet), std::runtime_error);
}

// Stopping right after an epoch's last batch resumes into the next epoch.
TEST(TranslationE2E, ResumeAtAnEpochBoundary) {
  TempDir dir("mt_resume_epoch");
  write_toy(dir.path, "train", 400, 1);
  write_toy(dir.path, "valid", 20, 2);
  const std::string opts = "  max_epochs: 2\n  valid_every: 0\n  log_every: 5\n  threads: 1\n";
  auto config = [&](const std::string& out) {
    return train::parse_train_config(toy_config(dir.path, out, opts, "  dropout: 0.1\n"));
  };
  train::RunOptions quiet;
  quiet.print = [](const std::string&) {};
  train::TrainSummary a = train::train_translation(config(dir.path + "/a"), quiet);
  ASSERT_TRUE(a.completed);
  ASSERT_EQ(a.steps % 2, 0) << "two epochs of equal length";
  train::RunOptions stop = quiet;
  stop.stop_after_steps = a.steps / 2;  // exactly the end of epoch 1
  train::TrainSummary b1 = train::train_translation(config(dir.path + "/b"), stop);
  EXPECT_FALSE(b1.completed);
  EXPECT_EQ(b1.epoch, 1);
  train::RunOptions resume = quiet;
  resume.resume = true;
  train::TrainSummary b2 = train::train_translation(config(dir.path + "/b"), resume);
  EXPECT_EQ(b2.steps, a.steps);
  EXPECT_TRUE(same_tensors(dir.path + "/a/checkpoint/model.safetensors", dir.path + "/b/checkpoint/model.safetensors"));
}

// ---- through the command ----

TEST(TranslationCli, CorpusAndConfigErrorsSurface) {
  TempDir dir("mt_cli_errors");
  data::write_lines(dir.path + "/train.en", {"a b", "c d", "e f", "g h", "i j"});
  data::write_lines(dir.path + "/train.fr", {"a b", "c d", "e f", "g h"});
  write_toy(dir.path, "valid", 5, 2);
  const std::string cfg = dir.path + "/bad.yaml";
  std::ofstream(cfg) << toy_config(dir.path, dir.path + "/out", "  max_epochs: 1\n");
  CommandResult r = run_attn("train -c " + cfg, dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(dir.path + "/train.en"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir.path + "/train.fr"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4"), std::string::npos) << r.err;

  // invalid UTF-8 in a corpus names the file and line
  data::write_lines(dir.path + "/train.fr", {"a b", "c d", "e \xc3", "g h", "i j"});
  r = run_attn("train -c " + cfg, dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(dir.path + "/train.fr:3"), std::string::npos) << r.err;

  // an unknown key in the config, and in --set, is named
  r = run_attn("train -c " + cfg + " --set train.learning_rate=1", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("train.learning_rate: unknown key"), std::string::npos) << r.err;
  r = run_attn("train -c " + cfg + " --set model.type=gpt", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("model.type"), std::string::npos) << r.err;

  // a missing file is named
  r = run_attn("train -c " + cfg + " --set data.train_src=" + dir.path + "/nope.en", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("nope.en"), std::string::npos) << r.err;
}

// `attn demo` trains the toy task with the real trainer and translates most
// held-out sentences exactly; it never replaces a folder it did not make.
TEST(TranslationCli, DemoLearnsTheToyTask) {
  TempDir dir("mt_cli_demo");
  CommandResult r = run_attn("demo --out " + dir.path + "/demo --threads 1", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("finished: max_epochs"), std::string::npos) << r.out;
  long long exact = -1, total = -1;
  const size_t at = r.out.find("exact translations: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "exact translations: %lld of %lld", &exact, &total), 2);
  EXPECT_EQ(total, 200);
  EXPECT_GE(exact, 150) << r.out;
  EXPECT_NE(r.out.find("deux<-two"), std::string::npos) << "the attended source words are shown:\n" << r.out;
  std::filesystem::create_directories(dir.path + "/mine");
  std::ofstream(dir.path + "/mine/notes.txt") << "keep me";
  r = run_attn("demo --out " + dir.path + "/mine", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("was not made by attn demo"), std::string::npos) << r.err;
  EXPECT_EQ(read_bytes(dir.path + "/mine/notes.txt"), "keep me");
}

TEST(TranslationCli, TranslateAndScore) {
  TempDir dir("mt_cli");
  write_toy(dir.path, "train", 3000, 1);
  write_toy(dir.path, "valid", 50, 2);
  const std::string cfg = dir.path + "/toy.yaml";
  std::ofstream(cfg) << toy_config(dir.path, dir.path + "/run", "  max_epochs: 4\n  valid_every: 0\n  threads: 1\n");
  CommandResult r = run_attn("train -c " + cfg, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("valid step"), std::string::npos) << r.out;
  const std::string model = " -m " + dir.path + "/run --threads 1";

  // stdin -> stdout; the empty line stays empty
  r = run_attn("translate" + model + " -b 3", dir.path, "one two three .\n\nred cat .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> out;
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  ASSERT_EQ(out.size(), 3u) << r.out;
  EXPECT_EQ(out[0], "trois deux un .");
  EXPECT_EQ(out[1], "");
  EXPECT_FALSE(out[2].empty());

  // invalid UTF-8: an error naming the line
  r = run_attn("translate" + model, dir.path, "one .\ntwo .\n\xff\xfe .\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("stdin:3"), std::string::npos) << r.err;

  // hard alignments: one "i-j" list per line, indices inside the sentences
  r = run_attn("translate" + model + " -b 1 --alignments hard", dir.path, "one two three .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("trois deux un . ||| "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0-2"), std::string::npos) << r.out;  // one -> un (word 2 of the target)

  // soft alignments to a file: one JSON line per sentence, rows x columns = (target pieces + </s>) x source pieces
  r = run_attn("translate" + model + " -b 2 --alignments soft --alignments-out " + dir.path + "/soft.jsonl", dir.path,
               "one two .\nsun .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> soft = data::read_lines(dir.path + "/soft.jsonl");
  ASSERT_EQ(soft.size(), 2u);
  for (const auto& l : soft) {
    EXPECT_NE(l.find("\"weights\":[["), std::string::npos) << l;
    EXPECT_NE(l.find("</s>"), std::string::npos) << l;
  }

  // heatmaps: one file per non-empty input line, numbered by line, whose cells are the
  // soft alignment's weights, (target pieces + </s>) x source pieces, labels escaped
  const std::string maps = dir.path + "/maps";
  r = run_attn("translate" + model + " -b 2 --alignments soft --heatmaps " + maps + " --heatmap-format svg", dir.path,
               "one two .\n\nsun .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(maps + "/0001.svg"));
  EXPECT_FALSE(std::filesystem::exists(maps + "/0002.svg")) << "an empty line has no heatmap";
  EXPECT_TRUE(std::filesystem::exists(maps + "/0003.svg"));
  const nlohmann::json first = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  const std::string svg = read_bytes(maps + "/0001.svg");
  const size_t rows = first["tgt"].size(), cols = first["src"].size();
  size_t cells = 0;
  for (size_t at = svg.find("class=\"cell\""); at != std::string::npos; at = svg.find("class=\"cell\"", at + 1)) ++cells;
  EXPECT_EQ(cells, rows * cols);
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) {
      const std::string cell = "data-r=\"" + std::to_string(i) + "\" data-c=\"" + std::to_string(j) + "\" data-w=\"" +
                               viz::format_weight(first["weights"][i][j].get<float>()) + "\"";
      EXPECT_NE(svg.find(cell), std::string::npos) << cell;
    }
  for (const auto& label : first["src"]) EXPECT_NE(svg.find(">" + label.get<std::string>() + "</text>"), std::string::npos);
  EXPECT_NE(svg.find(">&lt;/s&gt;</text>"), std::string::npos) << "the EOS row, escaped";
  r = run_attn("translate" + model + " --heatmaps " + maps, dir.path, "red cat .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(maps + "/0001.png").substr(0, 4), "\x89PNG");
  r = run_attn("translate" + model + " --heatmaps " + maps + " --heatmap-format gif", dir.path, "red cat .\n");
  EXPECT_NE(r.status, 0);

  // the training curves of this run, from the directory or the log itself
  r = run_attn("plot " + dir.path + "/run -o " + dir.path + "/curves.png", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(dir.path + "/curves.png").substr(0, 4), "\x89PNG");
  r = run_attn("plot " + dir.path + "/run/log.jsonl --x time -o " + dir.path + "/curves.pdf", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(dir.path + "/curves.pdf").substr(0, 5), "%PDF-");
  r = run_attn("plot " + dir.path + "/run -o " + dir.path + "/curves.gif", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unknown figure format '.gif'"), std::string::npos) << r.err;
  r = run_attn("plot " + dir.path + "/nope -o " + dir.path + "/c.png", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(dir.path + "/nope: cannot open"), std::string::npos) << r.err;

  // n-best: Moses format, n lines per sentence
  r = run_attn("translate" + model + " -b 4 -n 3", dir.path, "one two .\nsun .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("0 ||| "), std::string::npos);
  EXPECT_NE(r.out.find("1 ||| "), std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6);

  // score: BLEU and chrF, from a file and from stdin
  const data::ParallelCorpus test = data::reversal_corpus(20, 3);
  data::write_lines(dir.path + "/test.en", test.src);
  data::write_lines(dir.path + "/test.fr", test.tgt);
  r = run_attn("translate" + model + " -i " + dir.path + "/test.en -o " + dir.path + "/hyp.fr", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_attn("score --ref " + dir.path + "/test.fr --hyp " + dir.path + "/hyp.fr", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("BLEU = "), 0u) << r.out;
  EXPECT_NE(r.out.find("chrF2 = "), std::string::npos) << r.out;
  r = run_attn("score --json --ref " + dir.path + "/test.fr", dir.path, "only one line\n");
  EXPECT_NE(r.status, 0);  // 20 references, 1 hypothesis
  EXPECT_NE(r.err.find("20"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn::testing::translation_e2e_test
