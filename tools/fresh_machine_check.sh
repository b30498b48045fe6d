#!/usr/bin/env bash
# Runs the README's two quick-start commands on a fresh Debian 12 machine: a minimal bookworm root made
# once with debootstrap (kept as a pristine tarball in a cache directory), a clean clone of one commit
# (uncommitted changes are not part of it) at /root/matmem, and each command in its own new copy of the
# root, as root, in a chroot. Reports each command's exit status and wall time and keeps its full output.
# It downloads (debootstrap, and apt-get inside the root through tools/setup.sh), so it is not a CI step.
#   sudo tools/fresh_machine_check.sh                  both commands at HEAD
#   sudo tools/fresh_machine_check.sh --help           every option
set -euo pipefail

readonly SUITE=bookworm
readonly ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

usage() {
  cat <<EOF
Usage: tools/fresh_machine_check.sh [options]

Runs the two commands of README.md's "Quick start" (taken from the README of the checked commit) on a
fresh Debian 12 root, each in its own untouched copy of it, from a clean clone at /root/matmem. Needs
root. Downloads: it is not a CI step.

Options:
  --commit REF     commit to check (default: HEAD of the repository this script is in); a clean
                   clone, so uncommitted changes are not included
  --cache DIR      where the pristine root, the work roots and the results go
                   (default: \$MATMEM_FRESH_CACHE or /var/cache/matmem-fresh-root)
  --run WHICH      main (the first command: setup and training), tests (the second: setup and
                   ctest) or both (default: both)
  --results DIR    where the logs and the summary go (default: CACHE/results/DATE-COMMIT)
  --mirror URL     Debian mirror for debootstrap and apt inside the root (default: the one apt uses
                   here for $SUITE, read from /etc/apt/sources.list and /etc/apt/sources.list.d/)
  --rebuild-root   make the pristine root again even if the cache has one
  --keep           leave each command's root in place (unmounted) for inspection
  --verbose        also show each command's output as it runs (it always goes to the log)
  -h, --help       this text

Exit status: 0 if every command run passed, 1 if one failed, 2 for a usage or setup error.
EOF
}

die() { echo "fresh_machine_check: $*" >&2; exit 2; }
say() { echo "== $*"; }

# --- options ---------------------------------------------------------------------------------------
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
commit=HEAD
cache=${MATMEM_FRESH_CACHE:-/var/cache/matmem-fresh-root}
which=both
results=""
mirror=""
rebuild=0
keep=0
verbose=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --commit|--cache|--run|--results|--mirror)
      if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (see --help)"; fi
      case "$1" in
        --commit) commit=$2 ;; --cache) cache=$2 ;; --run) which=$2 ;;
        --results) results=$2 ;; --mirror) mirror=$2 ;;
      esac
      shift 2 ;;
    --rebuild-root) rebuild=1; shift ;;
    --keep) keep=1; shift ;;
    --verbose) verbose=1; shift ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
case "$which" in main|tests|both) ;; *) die "--run takes main, tests or both, not '$which'" ;; esac
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts): run it with sudo or as root"
[ "$(uname -s)" = Linux ] || die "needs Linux"
command -v git >/dev/null || die "needs git"

repo=$(git -C "$script_dir" rev-parse --show-toplevel 2>/dev/null) \
  || die "$script_dir is not inside a git repository"
sha=$(git -C "$repo" rev-parse --verify --quiet "$commit^{commit}") \
  || die "no commit '$commit' in $repo"
short=${sha:0:7}
cache=$(realpath -m "$cache")
case "$cache/" in "$repo/"*) die "the cache $cache is inside the repository; choose one outside it" ;; esac
mkdir -p "$cache" || die "cannot create the cache directory $cache"
[ -n "$results" ] || results="$cache/results/$(date +%Y%m%d-%H%M%S)-$short"
mkdir -p "$results" || die "cannot create the results directory $results"
results=$(cd "$results" && pwd)

# --- cleanup: unmount everything, stop what runs inside, remove the work roots ---------------------
mounts=()      # mount points, in mounting order
work_dirs=()   # directories to remove on exit (unless --keep, for roots)
root_dirs=()   # roots made for the commands

mounted_under() {  # prints every mount point at or under $1, deepest first
  awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print $2 }' /proc/mounts | sort -r
}

stop_processes_in() {  # ends the processes whose root is $1 (left over after an interruption)
  local root=$1 sig p
  for sig in TERM KILL; do
    for p in /proc/[0-9]*; do
      if [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ]; then kill "-$sig" "${p#/proc/}" 2>/dev/null || true; fi
    done
    [ "$sig" = KILL ] || sleep 1
  done
}

unmount_all() {
  local i m
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=${mounts[i]}
    if mountpoint -q "$m"; then umount "$m" 2>/dev/null || umount -l "$m" || echo "fresh_machine_check: could not unmount $m" >&2; fi
  done
  mounts=()
}

remove_tree() {  # removes $1, unmounting what is left under it (e.g. by a failed debootstrap) first
  local left m
  [ -e "$1" ] || return 0
  for m in $(mounted_under "$1"); do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  left=$(mounted_under "$1")
  if [ -n "$left" ]; then
    echo "fresh_machine_check: not removing $1: still mounted: $left" >&2
    return 1
  fi
  rm -rf --one-file-system "$1"
}

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local rc=$? r d
  trap - EXIT INT TERM
  exec 1>&3 2>&4  # the script's own output, not a command's log it may have been interrupted in
  for r in "${root_dirs[@]}"; do [ -d "$r" ] && stop_processes_in "$r"; done
  unmount_all
  for d in "${work_dirs[@]}"; do remove_tree "$d" || rc=2; done
  if ((keep)); then for r in "${root_dirs[@]}"; do [ -d "$r" ] && echo "kept root: $r"; done; fi
  exit "$rc"
}
exec 3>&1 4>&2  # kept for the cleanup's messages
trap cleanup EXIT
trap 'echo "fresh_machine_check: interrupted" >&4; exit 130' INT
trap 'echo "fresh_machine_check: terminated" >&4; exit 143' TERM

# --- the mirror apt uses here ----------------------------------------------------------------------
apt_entries() {  # prints "URI SUITE COMPONENTS..." for every enabled deb entry of apt's sources
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk '{ sub(/#.*/, "") }
         $1 == "deb" { i = 2
                       if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                       if (i + 1 <= NF) { line = $i " " $(i + 1)
                                          for (j = i + 2; j <= NF; j++) line = line " " $j
                                          print line } }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush(   n, u, s, i, j) {
           if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
             n = split(uris, u, " "); m = split(suites, s, " ")
             for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print u[i], s[j], comps
           }
           types = uris = suites = comps = ""; enabled = "yes"
         }
         BEGIN { enabled = "yes" }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         /^[ \t]/ { sub(/^[ \t]+/, ""); if (key == "types") types = types " " $0
                    else if (key == "uris") uris = uris " " $0
                    else if (key == "suites") suites = suites " " $0
                    else if (key == "components") comps = comps " " $0
                    next }
         { key = tolower($0); sub(/:.*/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
           if (key == "types") types = val; else if (key == "uris") uris = val
           else if (key == "suites") suites = val; else if (key == "components") comps = val
           else if (key == "enabled") enabled = val }
         END { flush() }' "$f"
  done
}

# The root's sources: this machine's entries for the suite and its -updates and -security suites
# (what a Debian installation lists), or just the suite from --mirror.
root_sources=""
if [ -z "$mirror" ]; then
  entries=$(apt_entries | awk -v s="$SUITE" '$2 == s || index($2, s "-") == 1')
  mirror=$(awk -v s="$SUITE" '$2 == s { print $1; exit }' <<<"$entries")
  [ -n "$mirror" ] || die "no 'deb' entry for $SUITE in /etc/apt/sources.list or /etc/apt/sources.list.d/; give one with --mirror URL"
  root_sources=$(awk '{ printf "deb %s", $1; for (i = 2; i <= NF; i++) printf " %s", $i; print "" }' <<<"$entries")
else
  root_sources="deb $mirror $SUITE main"
fi

# --- the pristine root -----------------------------------------------------------------------------
tarball="$cache/$SUITE-minbase.tar"
info="$cache/$SUITE-minbase.info"
if ((rebuild)) || [ ! -s "$tarball" ]; then
  if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap \
      || die "could not install debootstrap"
  fi
  staging="$cache/staging-root"
  work_dirs+=("$staging")
  remove_tree "$staging" || die "cannot clear $staging"
  say "debootstrap --variant=minbase $SUITE from $mirror (log: $cache/$SUITE-minbase.log)"
  start=$(date +%s.%N)
  debootstrap --variant=minbase "$SUITE" "$staging" "$mirror" > "$cache/$SUITE-minbase.log" 2>&1 \
    || { tail -n 30 "$cache/$SUITE-minbase.log"; die "debootstrap failed, see $cache/$SUITE-minbase.log"; }
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  printf '%s\n' "# written by tools/fresh_machine_check.sh: this machine's mirror for the suite, its updates and security" \
    "$root_sources" > "$staging/etc/apt/sources.list"
  rm -rf "$staging"/var/cache/apt/archives/*.deb "$staging"/var/lib/apt/lists/*
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$staging" -cf "$tarball.tmp" . \
    || die "could not write $tarball"
  mv "$tarball.tmp" "$tarball"
  remove_tree "$staging"
  printf 'suite=%s\nvariant=minbase\nmirror=%s\nmade=%s\ndebootstrap_seconds=%s\n' \
    "$SUITE" "$mirror" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$secs" > "$info"
  say "pristine root made in $secs s: $tarball"
else
  say "pristine root from the cache: $tarball ($(grep -E '^(made|mirror)=' "$info" 2>/dev/null | tr '\n' ' '))"
fi

# --- the clean clone and the README's commands -----------------------------------------------------
clone="$cache/work/clone-$short-$$"
work_dirs+=("$clone")
say "clean clone of $repo at $sha"
git clone -q --no-checkout "$repo" "$clone" || die "git clone of $repo failed"
git -C "$clone" -c advice.detachedHead=false checkout -q --detach "$sha" || die "checkout of $sha failed"

# Each ```sh block of the README's "## Quick start" section, up to the next "## " heading, one file a block.
blocks="$clone.blocks"
work_dirs+=("$blocks")
mkdir -p "$blocks"
[ -f "$clone/README.md" ] || die "the commit has no README.md"
awk -v dir="$blocks" '
  /^## / { inside = ($0 ~ /^## Quick start[[:space:]]*$/); if (!inside) fence = 0; next }
  !inside { next }
  fence && /^```[[:space:]]*$/ { fence = 0; next }
  !fence && /^```sh[[:space:]]*$/ { fence = 1; n++; printf "" > (dir "/" n); next }
  fence { print >> (dir "/" n) }' "$clone/README.md"
count=$(find "$blocks" -type f | wc -l)
[ "$count" -eq 2 ] || die "README.md at $short has $count \`\`\`sh blocks under '## Quick start', not the two expected (the main job, then the tests)"
names=(main tests)
commands=("$(cat "$blocks/1")" "$(cat "$blocks/2")")

# The packages tools/setup.sh installs, read from its "packages=(...)" list (not by running it).
project_packages=()
if [ -f "$clone/tools/setup.sh" ]; then
  mapfile -t project_packages < <(awk '
    !on && /^[[:space:]]*packages=\(/ { on = 1; sub(/^[^(]*\(/, "") }
    on { last = sub(/\).*/, ""); n = split($0, w, /[[:space:]]+/)
         for (i = 1; i <= n; i++) if (w[i] != "") print w[i]
         if (last) exit }' "$clone/tools/setup.sh")
fi
((${#project_packages[@]})) || say "note: no packages=(...) list in tools/setup.sh, so the root is not checked for them"

# --- one command on one fresh root -----------------------------------------------------------------
mount_in() {  # mount_in TARGET ARGS...: mounts and remembers TARGET for the cleanup
  local target=$1; shift
  mount "$@" "$target" || die "mount $* $target failed"
  mounts+=("$target")
}

overall=0
summary="$results/summary.txt"
: > "$summary"
{ echo "commit: $sha"; echo "root: $tarball ($(tr '\n' ' ' < "$info" 2>/dev/null))"; } >> "$summary"

in_root() {  # in_root ROOT COMMAND: COMMAND in ROOT from /root/matmem, as root with a login's environment
  # shellcheck disable=SC2016  # $1 is expanded by the shell inside
  chroot "$1" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash PATH="$ROOT_PATH" \
    /bin/bash -c 'cd /root/matmem && eval "$1"' quickstart "$2" < /dev/null 3>&- 4>&-
}

stamp() {  # stamp TIMED: copies stdin to stdout, and each line with its arrival (s since the start) to TIMED
  local t0=$EPOCHREALTIME line
  while IFS= read -r line || [ -n "$line" ]; do
    printf '%s\n' "$line"
    awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$line" 'BEGIN { printf "%8.1f %s\n", b - a, l }' >> "$1"
  done
}

# timing TIMED: the first line of training output ("training …" or "step …") and the longest stretch
# without a line, from stamp's file.
timing() {
  awk '!first && ($2 == "training" || $2 == "step") { first = $1 }
       { gap = $1 - prev; if (gap > worst) { worst = gap; at = prev } prev = $1 }
       END { if (first) printf "first training line at %.0f s; ", first
             printf "longest silence %.0f s (after %.0f s)\n", worst, at }' "$1"
}

run_one() {  # run_one NAME COMMAND
  local name=$1 cmd=$2 root log start secs rc verdict mins key present=() p
  root="$cache/work/root-$short-$name-$$"
  log="$results/$name.log"
  root_dirs+=("$root")
  ((keep)) || work_dirs+=("$root")
  remove_tree "$root" || die "cannot clear $root"
  mkdir -p "$root"
  tar --numeric-owner --xattrs --xattrs-include='*' -C "$root" -xf "$tarball" || die "could not unpack $tarball"

  # The root must hold none of the project's packages, or it proves nothing about setup.sh.
  for p in "${project_packages[@]}"; do
    dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null \
      | grep -q "install ok installed" && present+=("$p")
  done
  ((${#present[@]} == 0)) || die "the pristine root already has ${present[*]}: make it again with --rebuild-root"

  cp -a "$clone" "$root/root/matmem"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  mount_in "$root/proc" -t proc proc
  if mount -t sysfs sysfs "$root/sys" 2>/dev/null; then mounts+=("$root/sys"); else mount_in "$root/sys" --bind /sys; fi
  mount_in "$root/dev" --bind /dev
  mount_in "$root/dev/pts" --bind /dev/pts

  say "$name: $cmd  (in $root, log: $log)"
  start=$(date +%s.%N)
  set +e
  : > "$log.timed"
  if ((verbose)); then
    in_root "$root" "$cmd" 2>&1 | stamp "$log.timed" | tee "$log"
  else
    in_root "$root" "$cmd" 2>&1 | stamp "$log.timed" > "$log"
  fi
  rc=${PIPESTATUS[0]}
  set -e
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ -f "$root/root/matmem/build/setup.log" ] && cp "$root/root/matmem/build/setup.log" "$results/$name.setup.log"

  stop_processes_in "$root"
  unmount_all

  verdict=pass
  ((rc == 0)) || { verdict=fail; overall=1; }
  mins=$(awk -v s="$secs" 'BEGIN { r = int(s + 0.5); printf "%d min %d s", int(r / 60), r % 60 }')
  # The line that says how it ended: training's "done: ..." or ctest's "N% tests passed, ...".
  key=$(grep -E '^done: |tests passed, ' "$log" | tail -n 1 || true)
  echo "--- last lines of $log"
  tail -n 15 "$log"
  echo "---"
  say "$name: $verdict, exit status $rc, wall time $secs s ($mins)"
  printf '%s: %s, exit status %d, wall time %s s (%s): %s\n' "$name" "$verdict" "$rc" "$secs" "$mins" "$cmd" >> "$summary"
  [ -z "$key" ] || printf '  %s\n' "$key" >> "$summary"
  printf '  %s (every line timed: %s)\n' "$(timing "$log.timed")" "$log.timed" >> "$summary"
  if ((!keep)); then say "removing $root"; remove_tree "$root" || true; fi
}

for i in 0 1; do
  [ "$which" = both ] || [ "$which" = "${names[i]}" ] || continue
  run_one "${names[i]}" "${commands[i]}"
done

echo
say "summary ($summary)"
cat "$summary"
echo "results: $results"
exit "$overall"
