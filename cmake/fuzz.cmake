# ATTN_FUZZ: the libFuzzer targets of fuzz/ (fuzz/README.md). Included at the
# end of the top-level CMakeLists.txt, after the library targets exist, so that
# everything the fuzz build changes is in this file and in fuzz/.
#
# The parsers the targets reach live in libattn (and attn_serve for the HTTP
# request bodies): those are compiled with -fsanitize=fuzzer-no-link (coverage
# for the fuzzer, no main) plus ASan and UBSan; the fuzz executables link with
# -fsanitize=fuzzer,address,undefined (libFuzzer's main). UBSan does not
# recover: undefined behaviour aborts, and the fuzzer records the input.
option(ATTN_FUZZ "Build the libFuzzer targets of fuzz/ (needs clang; see fuzz/README.md)" OFF)
if(NOT ATTN_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ATTN_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ "
                      "(packages clang and libfuzzer-14-dev, scripts/install-deps.sh)")
endif()
set(ATTN_FUZZ_SANITIZERS address,undefined)
set(ATTN_FUZZ_COMMON_FLAGS -fno-sanitize-recover=all -fno-omit-frame-pointer -gline-tables-only)
if(ATTN_SANITIZE STREQUAL ATTN_FUZZ_SANITIZERS)
  # Inside the ASan + UBSan build (scripts/test-sanitizers.sh, CI): the
  # sanitizers are already on every target, and the library's coverage is
  # limited to the parsers' sources (fuzz/coverage-allowlist.txt), so that the
  # test suite the same build runs does not pay for coverage in the kernels.
  # One build instead of two; the fuzzers' feedback is the parsers' branches.
  set(ATTN_FUZZ_LIB_FLAGS -fsanitize=fuzzer-no-link
      -fsanitize-coverage-allowlist=${CMAKE_SOURCE_DIR}/fuzz/coverage-allowlist.txt)
elseif(ATTN_SANITIZE)
  message(FATAL_ERROR "ATTN_FUZZ goes with ATTN_SANITIZE empty or ${ATTN_FUZZ_SANITIZERS}, not ${ATTN_SANITIZE}")
else()
  set(ATTN_FUZZ_LIB_FLAGS -fsanitize=fuzzer-no-link,${ATTN_FUZZ_SANITIZERS} ${ATTN_FUZZ_COMMON_FLAGS})
endif()
foreach(lib IN ITEMS attn attn_serve)
  target_compile_options(${lib} PRIVATE ${ATTN_FUZZ_LIB_FLAGS})
endforeach()
add_subdirectory(fuzz)
