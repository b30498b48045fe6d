#!/usr/bin/env bash
# Installs what matmem needs from Debian's packages (only what is missing), then configures and builds it in
# ./build. Safe to run again: with everything present it only rebuilds what changed.
#   tools/setup.sh             install, configure, build the matmem program (what the main job needs)
#   tools/setup.sh --tests     the same, then everything else: test programs, examples and the Python module
#                              (what ctest runs), and a .pth file that lets Debian's python3 import matmem
#   tools/setup.sh --python    the Python module alone (libmatmem and _matmem, no command, no tests) and the same
#                              .pth file; checks that /usr/bin/python3 imports it, and says how long it took
#   tools/setup.sh --docs      install what the build needs and doxygen, configure, and write the API reference
#                              of the public headers to build/docs/html (the target `docs`; compiles nothing)
#   tools/setup.sh --packages  print the package list of --tests, one a line (the test setup:packages_cover_build
#                              checks it against every header and library the build reads)
# It prints a line at least every 10 s: what apt-get is installing, the build's progress, and while one
# long file compiles, which one and for how long. The full output goes to build/setup.log.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every package the build reads, named here: --no-install-recommends below means a Recommends of one of
# these is not installed on a fresh machine (libxsimd-dev is only a Recommends of libxtensor-dev). Pictures:
# PLplot and its cairo driver (loaded at run time, so no build step reads it), a font for the cairo
# driver's text (fontconfig only Depends on one of several), libpng to read pictures back in the tests.
# Open MPI for distributed runs and sweeps, and its mpirun for their tests. zlib to read gzipped IDX files, and
# Fashion-MNIST's IDX files themselves (read at run time by --task fashion_mnist; the tests write their own).
# pkg-config (pkgconf), with which the tests build a program against the installed matmem.pc.
packages=(g++ cmake make xtensor-dev libxtensor-blas-dev libopenblas-dev liblapack-dev libfmt-dev catch2
          nlohmann-json3-dev libcli11-dev libxsmm-dev libxsimd-dev
          libplplot-dev plplot-driver-cairo fonts-dejavu-core libpng-dev libopenmpi-dev openmpi-bin
          zlib1g-dev dataset-fashion-mnist pkgconf)
# The Python module (--python, --tests): Debian's Python headers, pybind11 and numpy; and for its tests
# (--tests only) pytest, and matplotlib for the example that draws a learning curve.
python_packages=(python3-dev pybind11-dev python3-numpy)
python_test_packages=(python3-pytest python3-matplotlib)
what=program
configure=()
python_configure=(-DMATMEM_PYTHON=ON -DPython3_EXECUTABLE=/usr/bin/python3)
case "${1:-}" in
  --packages) printf '%s\n' "${packages[@]}" "${python_packages[@]}" "${python_test_packages[@]}"; exit 0 ;;
  --tests) what=tests; packages+=("${python_packages[@]}" "${python_test_packages[@]}"); configure=("${python_configure[@]}") ;;
  --python) what=python; packages+=("${python_packages[@]}"); configure=("${python_configure[@]}") ;;
  --docs) what=docs; packages+=(doxygen) ;;  # read by no build step: not in --packages' list
  "") ;;
  *) echo "setup: unknown argument $1 (takes none, --tests, --python, --docs or --packages)" >&2; exit 2 ;;
esac
if [ $# -gt 1 ]; then echo "setup: takes one argument at most (--tests, --python, --docs or --packages)" >&2; exit 2; fi

mkdir -p build
log=build/setup.log
: > "$log"
start=$(date +%s)

# progress LABEL: reads a command's output on stdin, appends it to the log, and prints the lines that say
# how far it is (apt's and the build's), condensed; after 10 s without such a line, a heartbeat naming what
# is still running and for how long.
progress() {
  local label=$1 line="" pending="" shown step="" last since now rc fields
  last=$(date +%s)
  since=$last
  while true; do
    if IFS= read -r -t 10 line; then
      line=$pending$line
      pending=""
      printf '%s\n' "$line" >> "$log"
      shown=""
      case "$line" in
        Get:*)  # "Get:7 URL bookworm/main amd64 NAME amd64 VERSION [SIZE]", or a package list's "Get:1 URL … [SIZE]"
          read -ra fields <<< "$line"
          if ((${#fields[@]} >= 8)); then shown="downloading ${fields[4]} ${fields[6]} ${fields[*]:7}"
          else shown="reading ${fields[*]:2}"; fi ;;
        "Setting up "*) shown="${line%% (*}" ;;
        \[*%\]\ Building*) step=$(basename "${line##* }" .o); shown="${line%%]*}] compiling $step" ;;
        \[*%\]\ Linking*) step=$(basename "${line##* }"); shown="${line%%]*}] linking $step" ;;
      esac
      now=$(date +%s)
      if [ -n "$shown" ]; then
        echo "setup: $shown"
        last=$now
        since=$now
      elif ((now - last >= 10)); then
        echo "setup: still $label ($((now - start)) s in all)"
        last=$now
      fi
    else
      rc=$?
      if ((rc <= 128)); then  # end of input
        [ -z "$pending$line" ] || printf '%s\n' "$pending$line" >> "$log"
        break
      fi
      pending=$pending$line  # 10 s without a whole line: keep the part read, say what is still running
      now=$(date +%s)
      echo "setup: still $label${step:+ (last started: $step, $((now - since)) s ago)}, $((now - start)) s in all"
      last=$now
    fi
  done
}

# run LABEL COMMAND…: runs it with its output through progress; on failure, the log's end and exit 1.
run() {
  local label=$1
  shift
  if ! "$@" 2>&1 | progress "$label"; then
    grep -E -B2 -A12 "error|Error|^E: " "$log" | tail -n 60 || true
    echo "setup: $label failed (\`$*\`), see $log"
    exit 1
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian packages and what they depend on: ${missing[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  run "reading the package lists" "${sudo[@]}" apt-get update -q
  run "installing packages" "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "setup: configuring build/"
run "configuring" cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON "${configure[@]}"
if [ "$what" = docs ]; then
  echo "setup: writing the API reference"
  run "running doxygen" cmake --build build --target docs
  echo "setup: wrote build/docs/html/index.html ($(($(date +%s) - start)) s; doxygen's warnings: build/docs/warnings.log)"
  exit 0
fi

# Debian's python3 imports the build's package (build/python/matmem) through a .pth file in its site folder
# for /usr/local, which this build owns: written when that folder is writable (root).
python_path_file() {
  local site
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  if mkdir -p "$site" 2>/dev/null && [ -w "$site" ]; then
    echo "$PWD/build/python" > "$site/matmem.pth"
    echo "setup: /usr/bin/python3 imports matmem from build/python ($site/matmem.pth)"
  else
    echo "setup: $site is not writable: set PYTHONPATH=$PWD/build/python to import matmem"
  fi
}

if [ "$what" = python ]; then
  echo "setup: building the Python module: libmatmem and _matmem ($jobs jobs)"
  run "compiling" cmake --build build -j "$jobs" --target matmem_python
  python_path_file
  version=$(PYTHONPATH=$PWD/build/python /usr/bin/python3 -c 'import matmem; print(matmem.__version__)') ||
    { echo "setup: built build/python/matmem, but /usr/bin/python3 cannot import it (above)"; exit 1; }
  echo "setup: built the Python module matmem $version in build/python ($(($(date +%s) - start)) s)"
  exit 0
fi
echo "setup: building the matmem program ($jobs jobs)"
run "compiling" cmake --build build -j "$jobs" --target matmem
echo "setup: built build/matmem ($(($(date +%s) - start)) s)"
if [ "$what" = tests ]; then
  echo "setup: building the test programs and examples"
  run "compiling" cmake --build build -j "$jobs"
  echo "setup: built the tests ($(($(date +%s) - start)) s); ctest --test-dir build runs them"
  python_path_file
fi
