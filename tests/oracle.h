// Runs a PyTorch/NumPy reference script (Debian's /usr/bin/python3, where
// python3-torch lives) and loads what it wrote: inputs, weights, outputs and
// gradients as one safetensors file. Shared by the parity tests.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "attn/nn/module.h"
#include "attn/tensor/safetensors.h"
#include "compare.h"

namespace attn::testing {

inline const char* oracle_python() {
  const char* env = std::getenv("ATTN_ORACLE_PYTHON");
  return env ? env : "/usr/bin/python3";
}

// Runs tests/oracle/<script> with `args` and the output path; returns the file.
// Fails the test (not skip) when the oracle cannot run: the suite promises parity.
inline SafetensorsFile run_oracle(const std::string& script, const std::string& args) {
  static std::map<std::string, SafetensorsFile> cache;  // one python start per script and args
  auto hit = cache.find(script + " " + args);
  if (hit != cache.end()) return hit->second;
  // one file per process: ctest runs every test in its own process, two at a time,
  // and two processes writing and reading one file raced (a test read a half-written file)
  std::string out = std::string(ATTN_BINARY_DIR) + "/oracle_" + script + "_" +
                    std::to_string(std::hash<std::string>{}(args)) + "_" + std::to_string(::getpid()) + ".safetensors";
  std::string cmd = std::string(oracle_python()) + " " + ATTN_TEST_DIR + "/oracle/" + script + " " + out + " " + args;
  int rc = std::system(cmd.c_str());
  if (rc != 0) throw std::runtime_error("oracle failed (exit " + std::to_string(rc) + "): " + cmd);
  SafetensorsFile loaded = load_safetensors(out);
  std::remove(out.c_str());
  return cache[script + " " + args] = std::move(loaded);
}

// Copies every parameter of `model` from the oracle's "param.<attn name>" (a shape
// that differs fails the test, naming the parameter, and is not copied); returns
// how many were copied, which the caller compares with the oracle's count.
inline int load_oracle_params(nn::Module& model, const SafetensorsFile& f) {
  int copied = 0;
  for (auto& [name, p] : model.named_parameters()) {
    const Tensor src = f.get("param." + name);
    EXPECT_EQ(src.shape(), p.shape()) << name;
    if (src.shape() != p.shape()) continue;
    std::copy(src.data(), src.data() + src.numel(), p.data());
    ++copied;
  }
  return copied;
}

// Largest |a-b| / (|b| + floor) with floor = 2e-3 * max|b|: relative error per
// element, except that elements far below the tensor's scale are judged
// against 2e-3 of the scale. Why: an element that is a sum of many products
// carries float32 rounding of the order of eps * (its terms), which does not
// shrink when the terms cancel to a near-zero result; torch's own float32
// result differs from a float64 one by as much there. With tol 1e-4 the floor
// allows 2e-7 * max|b| absolute (a few ulp of the largest element).
// Asserts shapes first; NaN on either side, or an Inf the other side does not
// have, gives NaN (a failure), see compare.h.
inline double max_rel_diff(const Tensor& a, const Tensor& b) { return compare(a, b, 2e-3, 1e-30).max_rel; }

#define EXPECT_CLOSE(a, b, tol, what) EXPECT_REL_CLOSE((a), (b), (tol), 2e-3, 1e-30, (what))

}  // namespace attn::testing
