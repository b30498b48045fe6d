#!/usr/bin/env bash
# Installs what matmem needs from Debian's packages (only what is missing), then configures and builds
# it, tests included, in ./build. Safe to run again: with everything present it only rebuilds what changed.
#   tools/setup.sh             install, configure, build
#   tools/setup.sh --packages  print the package list, one a line (the test setup:packages_cover_build
#                              checks it against every header and library the build reads)
set -euo pipefail
cd "$(dirname "$0")/.."

# Every package the build reads, named here: --no-install-recommends below means a Recommends of one of
# these is not installed on a fresh machine (libxsimd-dev is only a Recommends of libxtensor-dev). Pictures:
# PLplot and its cairo driver (loaded at run time, so no build step reads it), a font for the cairo
# driver's text (fontconfig only Depends on one of several), libpng to read pictures back in the tests.
# Open MPI for distributed runs and sweeps, and its mpirun for their tests. zlib to read gzipped IDX files, and
# Fashion-MNIST's IDX files themselves (read at run time by --task fashion_mnist; the tests write their own).
packages=(g++ cmake make xtensor-dev libxtensor-blas-dev libopenblas-dev liblapack-dev libfmt-dev catch2
          nlohmann-json3-dev libcli11-dev libxsmm-dev libxsimd-dev
          libplplot-dev plplot-driver-cairo fonts-dejavu-core libpng-dev libopenmpi-dev openmpi-bin
          zlib1g-dev dataset-fashion-mnist)
if [ "${1:-}" = --packages ]; then printf '%s\n' "${packages[@]}"; exit 0; fi
if [ $# -gt 0 ]; then echo "setup: unknown argument $1 (takes none, or --packages)" >&2; exit 2; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p build; log=build/setup.log
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON > "$log" 2>&1 || { cat "$log"; exit 1; }
cmake --build build -j "$jobs" >> "$log" 2>&1 || { tail -n 60 "$log"; echo "setup: build failed, see $log"; exit 1; }
echo "setup: built build/matmem"
