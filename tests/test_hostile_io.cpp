// Hostile I/O (issue 14): a failed write exits non-zero naming the path, never exit 0
// with the output lost.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "attn/cli/checked_output.h"
#include "train_test_util.h"

namespace attn::testing {
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

}  // namespace
}  // namespace attn::testing
