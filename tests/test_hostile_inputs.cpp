// Hostile input files and sentences (issue 14, items 4 and 7): NUL bytes,
// gzip files with trailing garbage, binary garbage, empty lines, mismatched
// line counts, over-long lines, a missing vocabulary and weights of another
// model shape. Each gives a clear error naming the file (and line), or a
// documented, reported behaviour.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/data/line_reader.h"
#include "attn/decode/translator.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/random.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/optim.h"
#include "attn/train/training_state.h"
#include "serve_test_util.h"
#include "train_test_util.h"

namespace attn::testing::hostile_inputs_test {
namespace {

namespace fs = std::filesystem;

template <class E, class F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}

std::string gzip_of(const std::vector<std::string>& lines, const std::string& dir) {
  data::write_lines(dir + "/tmp.gz", lines, true);
  return read_bytes(dir + "/tmp.gz");
}

TEST(HostileInputs, NulByteIsRefusedNamingFileLineAndByte) {
  TempDir dir("hostile_nul");
  const std::string plain = dir.path + "/nul.txt";
  write_bytes(plain, std::string("fine\nbad\0line\nnever read\n", 25));
  std::string msg = message_of<std::invalid_argument>([&] { data::read_lines(plain); });
  EXPECT_NE(msg.find(plain + ":2: NUL byte at byte 3"), std::string::npos) << msg;
  const std::string gz = dir.path + "/nul.gz";
  write_bytes(gz, gzip_of({"fine", std::string("a\0", 2)}, dir.path));
  msg = message_of<std::invalid_argument>([&] { data::read_lines(gz); });
  EXPECT_NE(msg.find(gz + ":2: NUL byte at byte 1"), std::string::npos) << msg;
  // through a command reading stdin
  write_bytes(dir.path + "/ref.txt", "a b\nc d\n");
  const CommandResult r = run_attn("score -r " + dir.path + "/ref.txt", dir.path, std::string("a b\nc\0d\n", 8));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("stdin:2: NUL byte at byte 1"), std::string::npos) << r.err;
}

TEST(HostileInputs, GzipWithTrailingGarbageIsRefusedNamingTheFile) {
  TempDir dir("hostile_gzip");
  const std::string one = gzip_of({"first", "second"}, dir.path);
  const std::string path = dir.path + "/trailing.gz";
  for (const std::string& garbage : {std::string("x"), std::string("garbage after the stream\n"), std::string(3, '\0')}) {
    write_bytes(path, one + garbage);
    const std::string msg = message_of<std::invalid_argument>([&] { data::read_lines(path); });
    EXPECT_NE(msg.find("'" + path + "': trailing garbage after the gzip data at byte " + std::to_string(one.size())),
              std::string::npos)
        << msg;
  }
  // concatenated gzip members (cat a.gz b.gz) are one stream, as gzip -d reads them
  write_bytes(path, one + gzip_of({"third"}, dir.path));
  EXPECT_EQ(data::read_lines(path), (std::vector<std::string>{"first", "second", "third"}));
  // a member cut short is refused
  write_bytes(path, one.substr(0, one.size() - 3));
  const std::string msg = message_of<std::runtime_error>([&] { data::read_lines(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("cut short"), std::string::npos) << msg;
}

TEST(HostileInputs, BinaryGarbageIsRefusedNamingFileAndLine) {
  TempDir dir("hostile_binary");
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes += char((i * 151 + 7) % 256);
  const std::string path = dir.path + "/garbage.bin";
  write_bytes(path, bytes);
  const std::string msg = message_of<std::invalid_argument>([&] { data::read_lines(path); });
  EXPECT_EQ(msg.rfind(path + ":", 0), 0u) << msg;
  EXPECT_TRUE(msg.find("NUL byte") != std::string::npos || msg.find("invalid UTF-8") != std::string::npos) << msg;
  // the same bytes as a training corpus stop `attn train` naming the file
  write_toy(dir.path, "valid", 5, 2);
  write_bytes(dir.path + "/train.fr", "a\nb\n");
  fs::copy_file(path, dir.path + "/train.en");
  write_bytes(dir.path + "/c.yaml", toy_config(dir.path, dir.path + "/run", "  max_epochs: 1\n"));
  const CommandResult r = run_attn("train -c " + dir.path + "/c.yaml", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/train.en:"), std::string::npos) << r.err;
}

TEST(HostileInputs, MismatchedLineCountsInScoreNameBothSides) {
  TempDir dir("hostile_counts");
  write_bytes(dir.path + "/ref.txt", "a\nb\nc\n");
  write_bytes(dir.path + "/hyp.txt", "a\nb\n");
  const CommandResult r = run_attn("score -r " + dir.path + "/ref.txt --hyp " + dir.path + "/hyp.txt", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/ref.txt has 3 lines, the hypotheses 2 (" + dir.path + "/hyp.txt)"),
            std::string::npos)
      << r.err;
}

// The toy model's translation options with a small over-long limit.
decode::TranslateOptions long_line_options(decode::LongLines rule) {
  decode::TranslateOptions o;
  o.search.beam = 1;
  o.max_src_tokens = 10;
  o.long_lines = rule;
  return o;
}

TEST(HostileInputs, OverLongLineRuleInTranslateLines) {
  const decode::TranslationModel& m = serve_toy_model();
  const std::string long_line = "red cat two . red cat two . red cat two .";
  const std::vector<std::string> lines = {"red cat .", long_line, ""};
  const int64_t pieces = int64_t(m.src_vocab->encode(long_line).size());
  ASSERT_GT(pieces, 10);
  ASSERT_LE(m.src_vocab->encode(lines[0]).size(), 10u);
  auto run = [&](decode::LongLines rule) {
    return decode::translate_lines(*m.model, *m.src_vocab, *m.tgt_vocab, lines, long_line_options(rule));
  };
  const auto cut = run(decode::LongLines::Truncate);
  EXPECT_EQ(cut[0].over_long_pieces, 0);
  EXPECT_EQ(cut[1].over_long_pieces, pieces);
  EXPECT_EQ(cut[1].src_pieces.size(), 10u);
  EXPECT_FALSE(cut[1].hypotheses.empty());
  EXPECT_TRUE(cut[2].hypotheses.empty());  // an empty line: an empty translation
  const auto skipped = run(decode::LongLines::Skip);
  EXPECT_EQ(skipped[1].over_long_pieces, pieces);
  EXPECT_TRUE(skipped[1].hypotheses.empty());
  EXPECT_EQ(skipped[0].hypotheses.at(0).text, cut[0].hypotheses.at(0).text);
  decode::TranslateOptions err = long_line_options(decode::LongLines::Error);
  err.first_line = 2001;
  const std::string msg = message_of<std::invalid_argument>(
      [&] { decode::translate_lines(*m.model, *m.src_vocab, *m.tgt_vocab, lines, err); });
  EXPECT_NE(msg.find("line 2002: " + std::to_string(pieces) + " source pieces, over the limit of 10"), std::string::npos)
      << msg;
  decode::TranslateOptions unlimited = long_line_options(decode::LongLines::Error);
  unlimited.max_src_tokens = 0;
  const auto all = decode::translate_lines(*m.model, *m.src_vocab, *m.tgt_vocab, lines, unlimited);
  EXPECT_EQ(all[1].src_pieces.size(), size_t(pieces));
  EXPECT_EQ(all[1].over_long_pieces, 0);
}

TEST(HostileInputs, AttnTranslateReportsOverLongAndEmptyLines) {
  TempDir dir("hostile_long");
  const std::string input = "red cat .\nred cat two . red cat two . red cat two .\n\nred cat two . red cat two .\n";
  const std::string base = "translate -m " + serve_toy_run() + " -b 1 --threads 1 --max-src-pieces 10";
  CommandResult r = run_attn(base, dir.path, input);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;  // one output line per input line
  EXPECT_NE(r.out.find("\n\n"), std::string::npos) << "the empty line gives an empty line: " << r.out;
  EXPECT_NE(r.err.find("attn translate: stdin:2: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("source pieces, over --max-src-pieces 10: translated from its first 10"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("attn translate: stdin:4: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stdin:1:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stdin:3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 of 4 lines had more than 10 source pieces and were truncated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a line over 65536 bytes counts as over-long"), std::string::npos) << r.err;

  r = run_attn(base + " --long-lines skip", dir.path, input);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> out;
  for (size_t a = 0, b; (b = r.out.find('\n', a)) != std::string::npos; a = b + 1) out.push_back(r.out.substr(a, b - a));
  ASSERT_EQ(out.size(), 4u) << r.out;
  EXPECT_FALSE(out[0].empty());
  EXPECT_TRUE(out[1].empty() && out[2].empty() && out[3].empty()) << r.out;
  EXPECT_NE(r.err.find("skipped (an empty output line)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("were skipped"), std::string::npos) << r.err;

  write_bytes(dir.path + "/in.txt", input);
  r = run_attn(base + " --long-lines error -i " + dir.path + "/in.txt -o " + dir.path + "/out.txt", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/in.txt: line 2: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("over the limit of 10 (--long-lines error)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path + "/out.txt")) << "a failed translation left an output file";
}

// The largest resident set of any child waited for so far, in bytes.
long children_peak_rss() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return ru.ru_maxrss * 1024L;
}

// Memory does not grow with a line's length before the over-long line rule
// applies (before: a 10 MB line to `attn translate -b 1` peaked at 2.48 GB,
// SentencePiece encoding it whole). The reader holds at most the line limit.
TEST(HostileInputs, TenMegabyteLineIsCutAtTheReaderNotHeldWhole) {
  TempDir dir("hostile_10mb");
  std::string line;
  for (int i = 0; line.size() < (size_t(10) << 20); ++i) line += i % 7 ? "red cat two . " : "yellow ";
  const std::string input = "red cat .\n" + line + "\nred cat .\n";
  CommandResult r = run_attn("translate -m " + serve_toy_run() + " -b 1 --threads 1", dir.path, input);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << "one output line per input line";
  EXPECT_NE(r.err.find("stdin:2: line over 65536 bytes: translated from its first 65536 bytes"), std::string::npos)
      << r.err;
  const long peak = children_peak_rss();
  EXPECT_LT(peak, 700L << 20) << "attn translate of a 10 MB line peaked at " << (peak >> 20) << " MiB";
  r = run_attn("translate -m " + serve_toy_run() + " -b 1 --threads 1 --long-lines error", dir.path, input);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("stdin:2: line over 65536 bytes (over-long at --max-src-pieces 250, --long-lines error)"),
            std::string::npos)
      << r.err;
  // the readers of corpora and references refuse a line over 1 MiB, naming it
  write_bytes(dir.path + "/long.txt", "short\n" + line + "\n");
  const std::string msg = message_of<std::invalid_argument>([&] { data::read_lines(dir.path + "/long.txt"); });
  EXPECT_NE(msg.find(dir.path + "/long.txt:2: line over 1048576 bytes"), std::string::npos) << msg;
}

// A 1 GB file of NUL bytes (sparse: nothing on disk) is refused after the
// first read, not after holding the whole "line" (before: 1.1 GB, then the error).
TEST(HostileInputs, GigabyteOfNulBytesIsRefusedAtTheFirstRead) {
  TempDir dir("hostile_nul_gb");
  const std::string nul = dir.path + "/nul.bin";
  std::ofstream(nul).close();
  fs::resize_file(nul, size_t(1) << 30);
  write_bytes(dir.path + "/ref.txt", "a b\n");
  const CommandResult r = run_attn("score -r " + dir.path + "/ref.txt --hyp " + nul, dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(nul + ":1: NUL byte at byte 0"), std::string::npos) << r.err;
  const long peak = children_peak_rss();
  EXPECT_LT(peak, 700L << 20) << "attn score of a 1 GB NUL file peaked at " << (peak >> 20) << " MiB";
}

// The decoding commands bound what a user can ask for, as the server does, and
// name the flag (before: `translate -b 100000` ran for minutes at 1.4 GB,
// `--threads -3` was accepted, `explain` had no --max-src-pieces).
TEST(HostileInputs, DecodingCommandsBoundBeamThreadsAndPiecesNamingTheFlag) {
  TempDir dir("hostile_flags");
  const std::string run = serve_toy_run();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"translate -m " + run + " -b 100000", "--beam: Value 100000 not in range 1 to 64"},
      {"translate -m " + run + " --nbest 0", "--nbest: Value 0 not in range 1 to 64"},
      {"translate -m " + run + " --threads -3", "--threads: Value -3 not in range 0 to 4096"},
      {"translate -m " + run + " --batch 0", "--batch: Value 0 not in range 1 to 4096"},
      {"explain -m " + run + " -b 65", "--beam: Value 65 not in range 1 to 64"},
      {"explain -m " + run + " --threads -3", "--threads: Value -3 not in range 0 to 4096"},
      {"explain -m " + run + " --max-src-pieces 0", "--max-src-pieces: Value 0 not in range 1 to 1000000"},
      {"caption -m " + run + " --threads -1 x.png", "--threads: Value -1 not in range 0 to 4096"},
  };
  for (const auto& [args, want] : cases) {
    const CommandResult r = run_attn(args, dir.path, "red cat .\n");
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.err.find(want), std::string::npos) << args << ": " << r.err;
  }
  const CommandResult r =
      run_attn("explain -m " + run + " --max-src-pieces 8", dir.path, "red cat .\nred cat two . red cat two .\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("stdin:2: text: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("source pieces, over the limit of 8 (--max-src-pieces)"), std::string::npos) << r.err;
}

// The limit is exact and a cut never splits a UTF-8 character: a line of
// exactly max_bytes is whole (also with CRLF), one byte more is over.
TEST(LineReader, LimitIsExactAndCutsAtACharacter) {
  TempDir dir("line_limit");
  const std::string p = dir.path + "/l.txt";
  write_bytes(p, "abcd\r\nabcde\nab\xC3\xA9" "d\n");  // (split: \xA9d would be one hex escape)  // 4 bytes + CRLF, 5 bytes, "abéd" (5 bytes)
  std::vector<size_t> cut;
  std::vector<std::string> lines = data::read_lines(p, {4, &cut});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "abcd");
  EXPECT_EQ(lines[1], "abcd");
  EXPECT_EQ(lines[2], "ab\xC3\xA9") << "cut after the whole e-acute";
  EXPECT_EQ(cut, (std::vector<size_t>{1, 2}));
  cut.clear();
  lines = data::read_lines(p, {3, &cut});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "ab") << "a cut at byte 3 would split the two bytes of e-acute";
  const std::string msg = message_of<std::invalid_argument>([&] { data::read_lines(p, {4, nullptr}); });
  EXPECT_NE(msg.find(p + ":2: line over 4 bytes"), std::string::npos) << msg;
  EXPECT_NO_THROW(data::read_lines(p, {5, nullptr}));
}

TEST(HostileInputs, MissingVocabularyIsNamed) {
  TempDir dir("hostile_vocab");
  const std::string run = dir.path + "/run";
  fs::create_directories(run);
  for (const char* f : {"model.safetensors", "vocab.tgt.model"})
    fs::copy_file(serve_toy_run() + "/" + f, run + "/" + f);
  const CommandResult r = run_attn("translate -m " + run, dir.path, "red cat .\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(run + "/vocab.src.model"), std::string::npos) << r.err;
}

TEST(HostileInputs, WeightsOfAnotherModelShapeAreRefusedNamingTheTensor) {
  TempDir dir("hostile_shape");
  // the toy run's config in the metadata, the tensors of a model with embed 16
  SafetensorsFile toy = load_safetensors(serve_toy_run() + "/model.safetensors");
  models::ModelConfig other = models::model_config_from_json(toy.metadata.at("config"));
  ASSERT_NE(other.embed, 16);
  other.embed = 16;
  Rng init(1);
  auto model = models::make_model(other, init, 0);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, p] : model->named_parameters()) tensors.push_back({name, p});
  const std::string path = dir.path + "/other.safetensors";
  save_safetensors(path, tensors, toy.metadata);
  const CommandResult r = run_attn("translate -m " + serve_toy_run() + " --weights " + path, dir.path, "red cat .\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(path + ": cannot load: tensor '"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected shape"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", 16]"), std::string::npos) << r.err;
}

// --resume of a run whose model changed since its checkpoint: another shape is
// refused naming every mismatched tensor, the same shapes under another config
// naming both configs; the model is left as it was.
TEST(HostileInputs, CheckpointOfAnotherModelIsRefusedOnResume) {
  TempDir dir("hostile_resume_shape");
  const std::string ckpt = dir.path + "/checkpoint";
  train::TrainOptions t;
  TinyNet saved(4, 6, 3, 1);
  train::Adam saved_adam(saved.named_parameters());
  train::TrainingState(t).save(ckpt, saved, R"({"hidden":6,"dropout":0.1})", saved_adam);
  TinyNet other(4, 8, 3, 2);
  train::Adam other_adam(other.named_parameters());
  std::string msg = message_of<std::runtime_error>(
      [&] { train::TrainingState::restore(ckpt, other, R"({"hidden":8,"dropout":0.1})", other_adam, t); });
  EXPECT_NE(msg.find(ckpt + "/model.safetensors: cannot load: tensor 'fc1.weight': expected shape [8, 4], found [6, 4]"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(params_bit_equal(other, TinyNet(4, 8, 3, 2))) << "a refused checkpoint changed the model";
  TinyNet same_shape(4, 6, 3, 3);
  train::Adam same_adam(same_shape.named_parameters());
  msg = message_of<std::runtime_error>(
      [&] { train::TrainingState::restore(ckpt, same_shape, R"({"hidden":6,"dropout":0.3})", same_adam, t); });
  EXPECT_NE(msg.find(ckpt + ": the checkpoint's model config {\"hidden\":6,\"dropout\":0.1} differs from this "
                            "config's {\"hidden\":6,\"dropout\":0.3}"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace attn::testing::hostile_inputs_test
