#!/usr/bin/env bash
# Installs everything attn needs to build, test and benchmark, from Debian's
# packages only. Safe to run again (apt-get skips what is installed).
# Arguments: further Debian packages to install with the list below
# (scripts/install-test-deps.sh adds the browser test's).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
PKGS=(
  build-essential cmake ninja-build pkg-config
  libopenblas-openmp-dev     
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libcpp-httplib-dev
  libsentencepiece-dev libpng-dev libjpeg62-turbo-dev zlib1g-dev
  libcairo2-dev libpango1.0-dev fonts-dejavu-core
  libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin # data-parallel training over MPI (docs/distributed-training.md); optional at configure time
  clang libclang-rt-dev libomp-dev  # the sanitizer builds (scripts/test-sanitizers.sh: clang, libomp + Archer)
  libopenblas0-pthread       # ... whose OpenMP runtime (libomp) cannot host the OpenMP build of OpenBLAS
  python3-torch python3-numpy
  python3-dev python3-pybind11  # the Python module attn (python/; docs/python.md)
  libtcmalloc-minimal4       
  libdnnl-dev                # oneDNN, beside attn's int8 / bf16 kernels in `attn bench quant`
  clang libfuzzer-14-dev     # the fuzz targets (fuzz/README.md, scripts/fuzz-smoke.sh)
)
PKGS+=("$@")
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Installing the pthread build of OpenBLAS (above) makes it the system's
# default libblas / liblapack / libopenblas (priority 100 against 95). Keep the
# OpenMP build the default: it is the one attn opens and the one NumPy and
# PyTorch, the tests' oracles and the benchmarks' peer, were measured with.
for alt in libopenblas.so.0 libblas.so.3 liblapack.so.3; do
  openmp=/usr/lib/x86_64-linux-gnu/openblas-openmp/$alt
  name=$alt-x86_64-linux-gnu
  if [ -e "$openmp" ] && update-alternatives --query "$name" 2>/dev/null | grep -q "^Value: .*openblas-pthread"; then
    $SUDO update-alternatives --set "$name" "$openmp" >/dev/null
  fi
done
