// Hostile I/O (issue 14): a failed write exits non-zero naming the path, never exit 0
// with the output lost.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "attn/cli/checked_output.h"
#include "serve_test_util.h"
#include "train_test_util.h"

namespace attn::testing::hostile_io_test {
namespace {

// `attn args` with stdout sent to `stdout_path`; its exit status and stderr.
CommandResult run_attn_stdout_to(const std::string& args, const std::string& dir, const std::string& stdout_path) {
  const std::string err = dir + "/stderr.txt";
  const std::string cmd = std::string(ATTN_BINARY_DIR) + "/attn " + args + " > " + stdout_path + " 2> " + err;
  const int rc = std::system(cmd.c_str());
  std::ifstream f(err);
  std::stringstream ss;
  ss << f.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, "", ss.str()};
}

TEST(HostileIo, ScoreToAFullStdoutFailsNamingStdout) {
  TempDir dir("hostile_io_score");
  write_bytes(dir.path + "/ref.txt", "the cat sat .\n");
  write_bytes(dir.path + "/hyp.txt", "the cat sat .\n");
  const std::string args = "score -r " + dir.path + "/ref.txt --hyp " + dir.path + "/hyp.txt";
  const CommandResult ok = run_attn_stdout_to(args, dir.path, dir.path + "/out.txt");
  EXPECT_EQ(ok.status, 0) << ok.err;
  const CommandResult full = run_attn_stdout_to(args, dir.path, "/dev/full");
  EXPECT_NE(full.status, 0);
  EXPECT_NE(full.err.find("stdout: write failed"), std::string::npos) << full.err;
}

TEST(HostileIo, CloseCheckedThrowsNamingTheFullFile) {
  std::ofstream full("/dev/full");
  ASSERT_TRUE(full.is_open());
  full << "a translation\n";
  try {
    cli::close_checked(full, "/dev/full");
    FAIL() << "a write to /dev/full was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: write failed"), std::string::npos) << e.what();
  }
  TempDir dir("hostile_io_close");
  std::ofstream good(dir.path + "/out.txt");
  good << "a translation\n";
  EXPECT_NO_THROW(cli::close_checked(good, dir.path + "/out.txt"));
  EXPECT_EQ(read_bytes(dir.path + "/out.txt"), "a translation\n");
}

// `attn args` in a shell whose file-size limit is `kib` KiB (ulimit -f, SIGXFSZ
// ignored): a write past it fails with EFBIG, as on a full disk, for regular files.
CommandResult run_attn_file_limit(const std::string& args, const std::string& dir, int kib, const std::string& in = "") {
  write_bytes(dir + "/stdin.txt", in);
  const std::string cmd = "sh -c \"trap '' XFSZ; ulimit -f " + std::to_string(kib * 2) + "; exec " +
                          std::string(ATTN_BINARY_DIR) + "/attn " + args + " < " + dir + "/stdin.txt > " + dir +
                          "/stdout.txt 2> " + dir + "/stderr.txt\"";
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, read_bytes(dir + "/stdout.txt"), read_bytes(dir + "/stderr.txt")};
}

// The names of the files in `dir` (a failed write must leave no temporary file).
std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Each command's output file, on a disk that fills up: exit 1 naming the file,
// the previous file unchanged, no temporary file left. Without the limit each works.
TEST(HostileIo, EveryOutputFileOnAFullDiskFailsNamingItAndKeepsThePreviousOne) {
  TempDir dir("hostile_io_files");
  const std::string run = serve_toy_run(), out = dir.path + "/out";
  std::filesystem::create_directories(out);
  data::write_lines(dir.path + "/corpus.txt", data::reversal_corpus(300, 5).src);  // each output passes 4 KiB
  struct Case {
    std::string what, args, file;
  };
  const std::vector<Case> cases = {
      {"vocab", "vocab -i " + dir.path + "/corpus.txt --size 30 -o " + out + "/v.model", out + "/v.model"},
      {"plot", "plot " + run + " -o " + out + "/curves.png", out + "/curves.png"},
      {"average", "average " + run + "/model.safetensors " + run + "/model.safetensors -o " + out + "/avg.safetensors",
       out + "/avg.safetensors"},
      {"translate -o", "translate -m " + run + " -b 1 --threads 1 -i " + dir.path + "/corpus.txt -o " + out + "/t.txt",
       out + "/t.txt"},
      {"translate --alignments-out", "translate -m " + run + " -b 1 --threads 1 --alignments soft -i " + dir.path +
       "/corpus.txt --alignments-out " + out + "/a.jsonl", out + "/a.jsonl"},
      {"explain --heatmap", "explain -m " + run + " --threads 1 --heatmap " + out + "/h.svg", out + "/h.svg"},
  };
  for (const Case& c : cases) {
    write_bytes(c.file, "previous");
    const CommandResult full = run_attn_file_limit(c.args, dir.path, 4, "red cat two . blue dog three . red cat two .\n");
    EXPECT_EQ(full.status, 1) << c.what << ": " << full.err;
    EXPECT_NE(full.err.find(c.file + ": write failed: File too large"), std::string::npos) << c.what << ": " << full.err;
    EXPECT_EQ(read_bytes(c.file), "previous") << c.what;
    EXPECT_EQ(files_in(out).size(), 1u) << c.what << ": a temporary file was left";
    const CommandResult ok = run_attn_file_limit(c.args, dir.path, 1 << 20, "red cat two .\n");
    EXPECT_EQ(ok.status, 0) << c.what << ": " << ok.err;
    EXPECT_NE(read_bytes(c.file), "previous") << c.what;
    std::filesystem::remove(c.file);
  }
}

// A path that is a device (here through a symbolic link, for the extension) is
// written in place, not replaced: its failure is reported, /dev/full stays a device.
TEST(HostileIo, DeviceOutputsAreWrittenInPlaceAndChecked) {
  TempDir dir("hostile_io_dev");
  const std::string run = serve_toy_run();
  std::filesystem::create_symlink("/dev/full", dir.path + "/full.png");
  CommandResult r = run_attn("plot " + run + " -o " + dir.path + "/full.png", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/full.png: write failed: No space left on device"), std::string::npos) << r.err;
  data::write_lines(dir.path + "/corpus.txt", data::reversal_corpus(300, 5).src);
  r = run_attn("vocab -i " + dir.path + "/corpus.txt --size 30 -o /dev/full", dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/dev/full: write failed: No space left on device"), std::string::npos) << r.err;
  r = run_attn("translate -m " + run + " --threads 1 --heatmaps " + dir.path + "/maps", dir.path, "red cat .\n");
  EXPECT_EQ(r.status, 0) << r.err;
  std::filesystem::remove(dir.path + "/maps/0001.png");
  std::filesystem::create_symlink("/dev/full", dir.path + "/maps/0001.png");
  r = run_attn("translate -m " + run + " --threads 1 --heatmaps " + dir.path + "/maps", dir.path, "red cat .\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.path + "/maps/0001.png: write failed"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/full"));
  // stdout of the JSON-lines commands (bench, explain) is checked once in main
  const CommandResult bench = run_attn_stdout_to("bench --print-peer-dir", dir.path, "/dev/full");
  EXPECT_EQ(bench.status, 1);
  EXPECT_NE(bench.err.find("stdout: write failed"), std::string::npos) << bench.err;
}

}  // namespace
}  // namespace attn::testing::hostile_io_test
