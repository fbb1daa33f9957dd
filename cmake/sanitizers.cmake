# ATTN_SANITIZE: a list of sanitizers applied to every target of the build, e.g.
#   -DATTN_SANITIZE=address,undefined   (the ASan+UBSan build)
#   -DATTN_SANITIZE=thread              (the TSan build; see scripts/test-sanitizers.sh
#                                        for why it is built with clang and libomp)
# Empty (the default): no sanitizer. scripts/test-sanitizers.sh configures both
# builds, with the run-time options and suppressions (tests/sanitizers/) they need.
set(ATTN_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined or thread (empty: none)")
if(ATTN_SANITIZE STREQUAL "ON")  # the earlier boolean option meant ASan + UBSan
  set(ATTN_SANITIZE "address,undefined" CACHE STRING "" FORCE)
elseif(ATTN_SANITIZE STREQUAL "OFF")
  set(ATTN_SANITIZE "" CACHE STRING "" FORCE)
endif()
if(ATTN_SANITIZE)
  message(STATUS "attn: sanitizers ${ATTN_SANITIZE}")
  # frame pointers: complete stacks in reports at no cost to the diagnosis;
  # no recovery from UB: a report fails the test instead of scrolling past.
  add_compile_options(-fsanitize=${ATTN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${ATTN_SANITIZE})
  # The command's own code is not where its time goes (the library's is):
  # under the sanitizers it compiles at -O0 (added after the build type's -O1),
  # about half the compile time of -O1 with ASan (test_serve_batching.cpp,
  # clang 14: 15.8 s -> 8.0 s), which keeps CI in budget. (The tests' own code
  # is at -O0 in every build: tests/CMakeLists.txt.)
  set(ATTN_SANITIZE_DRIVER_FLAGS -O0)
endif()
