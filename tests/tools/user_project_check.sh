#!/usr/bin/env bash
# Installs matmem and builds a user's project against the installed copy only, as a user outside the source
# tree would (tools/examples/user_project):
#
#   user_project_check.sh SOURCE_DIR BUILD_DIR
#
# 1. `cmake --install BUILD_DIR` into a temporary prefix, then moves the prefix elsewhere (the install must be
#    relocatable): the installed files are checked, and no installed text file may name the first prefix.
# 2. The public headers are closed: each includes only installed matmem headers, the C++ standard library
#    and nlohmann/json_fwd.hpp, and all of them compile together with the prefix's include/ as the only -I.
# 3. A copy of tools/examples/user_project is configured with CMAKE_PREFIX_PATH=the prefix (nothing else:
#    no package registry) and built; its `check` gradient-checks its op and its model.
# 4. The installed `matmem` (its RUNPATH finds the installed libmatmem) loads the project's plugin, trains
#    its model a few steps, resumes it, and gradient-checks its op by name.
# 5. With pkg-config: a small program compiled and linked with `pkg-config --cflags --libs matmem`, then run.
set -euo pipefail
src=$(realpath "$1")
build=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH MATMEM_PLUGINS
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
started=$(date +%s%N)
fail() { echo "FAILED: $*" >&2; exit 1; }
step() {
  local ms=$((($(date +%s%N) - started) / 1000000))
  printf '[%3d.%d s] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}

# 1. Install, then move.
step "installing $build into a temporary prefix"
cmake --install "$build" --prefix "$tmp/first/prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install"; }
mkdir -p "$tmp/moved"
mv "$tmp/first/prefix" "$tmp/moved/matmem"
rmdir "$tmp/first"
prefix=$tmp/moved/matmem
step "moved the prefix to $prefix"
expected=(bin/matmem lib/libmatmem.so lib/libmatmem.so.0.1 include/matmem/version.hpp
          lib/cmake/matmem/matmemConfig.cmake lib/cmake/matmem/matmemConfigVersion.cmake
          lib/cmake/matmem/matmemTargets.cmake lib/pkgconfig/matmem.pc)
while read -r header; do
  expected+=("include/matmem/$header")
done < <(grep -v -e '^#' -e '^$' "$src/tools/package/public_headers.txt")
for f in "${expected[@]}"; do [ -e "$prefix/$f" ] || fail "not installed: $f"; done
ls "$prefix"/lib/cmake/matmem/matmemTargets-*.cmake > /dev/null 2>&1 ||
  fail "not installed: lib/cmake/matmem/matmemTargets-<config>.cmake"
if grep -rIl "$tmp/first" "$prefix"; then fail "the installed files above name the prefix they were installed to"; fi
loaded=$(ldd "$prefix/bin/matmem" | sed -n 's/^[[:space:]]*libmatmem[^ ]* => \([^ ]*\) .*/\1/p')
[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$prefix/lib/libmatmem.so.0.1")" ] ||
  { ldd "$prefix/bin/matmem" | grep libmatmem
    fail "the installed matmem does not load the installed libmatmem (RUNPATH \$ORIGIN/../lib)"; }

# 2. The public headers: closed, and compilable with the prefix alone.
step "checking the installed headers are closed"
bad=0
while IFS= read -r header; do
  while IFS= read -r inc; do
    case "$inc" in
      matmem/*) [ -e "$prefix/include/$inc" ] || { echo "$header includes $inc, which is not installed"; bad=1; } ;;
      nlohmann/json_fwd.hpp) ;;
      */* | *.h) echo "$header includes $inc, neither a public matmem header nor the standard library"; bad=1 ;;
    esac
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' "$prefix/include/$header")
done < <(cd "$prefix/include" && find matmem -name '*.hpp' | sort)
((bad == 0)) || fail "the public headers are not closed (tools/package/public_headers.txt)"
(cd "$prefix/include" && find matmem -name '*.hpp' | sort | sed 's/.*/#include <&>/') > "$tmp/all_headers.cpp"
"$cxx" -std=c++20 -fsyntax-only -I"$prefix/include" "$tmp/all_headers.cpp" ||
  fail "the installed headers do not compile together"

# 3. The user's project, out of the source tree, against the prefix only.
step "configuring and building a copy of tools/examples/user_project"
cp -r "$src/tools/examples/user_project" "$tmp/mine"
rm -rf "$tmp/mine/build"
cmake -S "$tmp/mine" -B "$tmp/mine/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configuring the user project"; }
found=$(sed -n 's/^matmem_DIR:PATH=//p' "$tmp/mine/build/CMakeCache.txt")
[ "$found" = "$prefix/lib/cmake/matmem" ] || fail "find_package(matmem) found $found, not the prefix's"
cmake --build "$tmp/mine/build" -j 2 > "$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log"; fail "building the user project"; }
step "running its check"
"$tmp/mine/build/check" | tee "$tmp/check.log"
grep -q "check: all passed" "$tmp/check.log" || fail "the user project's check"

# 4. The installed command with the plugin.
cd "$tmp/mine"
matmem=$prefix/bin/matmem
plugin=./build/libmine.so
small=(--set model.layers=6x6 --set memrnn.slots=6 --set memrnn.slot=3x3 --set task.max_length=3 --set log_every=5
       --set checkpoint_every=10)
step "training the plugin's model with the installed matmem"
"$matmem" --plugin "$plugin" train --model memrnn --task copy --steps 10 "${small[@]}" --out runs/memrnn \
  > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; fail "matmem --plugin $plugin train --model memrnn"; }
tail -n 3 "$tmp/train.log"
step "resuming it"
"$matmem" --plugin "$plugin" train --resume runs/memrnn --steps 20 > "$tmp/resume.log" 2>&1 ||
  { cat "$tmp/resume.log"; fail "matmem --plugin $plugin train --resume"; }
tail -n 2 "$tmp/resume.log"
[ "$(tail -n 1 runs/memrnn/metrics.csv | cut -d, -f1)" = 20 ] || fail "the resumed run did not reach step 20"
step "gradient-checking the plugin's op with the installed matmem"
"$matmem" --plugin "$plugin" gradcheck --op matrix_square | tee "$tmp/gradcheck.log" ||
  fail "matmem --plugin $plugin gradcheck --op matrix_square"
grep -q matrix_square "$tmp/gradcheck.log" || fail "gradcheck --op matrix_square printed no row for it"

# 5. pkg-config.
if command -v pkg-config > /dev/null; then
  step "compiling a program with pkg-config --cflags --libs matmem"
  cat > "$tmp/hello.cpp" << 'CPP'
#include <cstdio>
#include <matmem/models/registry.hpp>
#include <matmem/runtime/isa.hpp>
int main() {
  std::printf("libmatmem %s, %zu models\n", matmem::version(), matmem::model_names().size());
  return matmem::model_names().empty();
}
CPP
  flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs matmem) || fail "pkg-config matmem"
  # shellcheck disable=SC2086
  "$cxx" "$tmp/hello.cpp" -o "$tmp/hello" $flags || fail "compiling with: $flags"
  "$tmp/hello" || fail "the program built with pkg-config's flags"
else
  echo "pkg-config is not installed (Debian's pkgconf, in tools/setup.sh's list): matmem.pc not checked"
fi
step "done"
