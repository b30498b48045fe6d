#!/usr/bin/env bash
# Installs what matmem needs from Debian's packages (only what is missing), then configures and builds
# it in ./build. Safe to run again: with everything present it only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make xtensor-dev libxtensor-blas-dev libopenblas-dev liblapack-dev libfmt-dev catch2
          nlohmann-json3-dev libcli11-dev libxsmm-dev libxsimd-dev)
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
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$log" 2>&1 || { cat "$log"; exit 1; }
cmake --build build -j "$jobs" >> "$log" 2>&1 || { tail -n 60 "$log"; echo "setup: build failed, see $log"; exit 1; }
echo "setup: built build/matmem"
