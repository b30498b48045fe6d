#!/usr/bin/env bash
# Every test program under AddressSanitizer and UndefinedBehaviorSanitizer, on this machine's native path:
# the full set, which the README's test command leaves out for time (tests/README.md).
# Builds build/sanitize-all (the whole tree at -O1, instrumented), then runs all its tests.
#   tests/sanitize_all.sh [ctest arguments…]      e.g. -R tools_tests to run one program
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh  # the packages, and a configured main tree
jobs=$(nproc 2>/dev/null || echo 2)
tree=build/sanitize-all
echo "sanitize_all: configuring and building $tree (a few minutes per core)"
cmake -S . -B "$tree" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DMATMEM_SANITIZE=ON \
      -DMATMEM_VARIANT_TESTS=OFF > "$tree.log" 2>&1 || { tail -n 40 "$tree.log"; exit 1; }
cmake --build "$tree" -j "$jobs" >> "$tree.log" 2>&1 || { grep -B2 -A12 -E "error" "$tree.log" | tail -n 60; exit 1; }
ctest --test-dir "$tree" --output-on-failure -j "$jobs" --no-tests=error "$@"
