#!/usr/bin/env bash
# Checks that tools/setup.sh installs every Debian package the build reads.
#
#   setup_packages_check.sh SOURCE_DIR BUILD_DIR
#
# Takes every file outside the source and build trees that the build used: the headers in the compiler's
# dependency files (CMake's *.o.d), the libraries on the link lines (link.txt: absolute paths and -lNAME)
# and the compiler itself. Maps each to the Debian package that owns it (dpkg -S), and fails naming every
# package that is neither in setup's list nor reached from it through hard dependencies (Depends and
# Pre-Depends, recursively; of alternatives `a | b` only the first, as apt takes it on a fresh machine;
# Recommends never: setup installs with --no-install-recommends). A file no package owns fails too.
set -euo pipefail
src=$(realpath "$1")
build=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The files the build read.
mapfile -t depfiles < <(find "$build" -name '*.o.d' -type f)
if ((${#depfiles[@]} == 0)); then
  echo "no compiler dependency files (*.o.d) under $build: build first (tools/setup.sh)" >&2
  exit 1
fi
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
{
  # Make-rule depfiles: 'target: dep dep \' lines; drop targets and line continuations.
  cat "${depfiles[@]}" | tr ' \t' '\n\n' | grep -v -e ':$' -e '^\\$' -e '^$'
  find "$build" -name link.txt -type f -exec cat {} + | tr ' \t' '\n\n' | while read -r tok; do
    case "$tok" in
      -l*) # a library the linker searches for: ask the compiler where it finds it
        for f in "lib${tok#-l}.so" "lib${tok#-l}.a"; do
          p=$("$compiler" -print-file-name="$f")
          if [ "$p" != "$f" ]; then echo "$p"; break; fi
        done ;;
      /*) echo "$tok" ;;
    esac
  done
  echo "$compiler"
} | grep '^/' | sort -u > "$tmp/used_raw"

# Normalise (.. and symlinks such as /etc/alternatives), keep what lies outside the two trees.
while read -r f; do
  [ -e "$f" ] || continue
  real=$(realpath "$f")
  case "$real" in "$src"/* | "$build"/*) continue ;; esac
  printf '%s\t%s\n' "$(realpath -s "$f")" "$real"
done < "$tmp/used_raw" | sort -u > "$tmp/used"

# 2. The package owning each file: dpkg knows a file by the path its package ships, which may be the
# literal path, the resolved one, or (merged /usr) the /lib or /bin form of either.
cut -f1,2 "$tmp/used" | tr '\t' '\n' | sort -u > "$tmp/candidates"
sed -n 's#^/usr/\(lib\|lib64\|bin\|sbin\)/#/\1/#p' "$tmp/candidates" >> "$tmp/candidates"
xargs -a "$tmp/candidates" -d '\n' dpkg -S 2> /dev/null | grep -v '^diversion by' > "$tmp/owners" || true
# owners: "pkg[:arch][, pkg…]: /path" -> path TAB pkg (one line per owning package)
awk -F': ' '{ n = split($1, p, ", "); for (i = 1; i <= n; ++i) { sub(/:.*/, "", p[i]); print $2 "\t" p[i] } }' \
  "$tmp/owners" | sort -u > "$tmp/owner_of"

# 3. The packages setup installs, with everything they pull in as hard dependencies.
"$src/tools/setup.sh" --packages > "$tmp/listed"
dpkg-query -W -f='${db:Status-Status}\t${Package}\t${Pre-Depends}, ${Depends}\t${Provides}\n' |
  awk -F'\t' '$1 == "installed"' | cut -f2- > "$tmp/installed"
awk -F'\t' '
  function strip(s) { gsub(/\([^)]*\)/, "", s); gsub(/:[a-z0-9-]+/, "", s); gsub(/[ \t]/, "", s); return s }
  FNR == NR { want[$1] = 1; queue[++tail] = $1; next }
  {
    installed[$1] = 1
    deps[$1] = $2
    n = split($3, prov, ",")
    for (i = 1; i <= n; ++i) { v = strip(prov[i]); if (v != "") providers[v] = providers[v] " " $1 }
  }
  END {
    head = 1
    while (head <= tail) {
      p = queue[head++]
      if (p in seen) continue
      seen[p] = 1
      n = split(deps[p], d, ",")
      for (i = 1; i <= n; ++i) {
        split(d[i], alt, "|")
        first = strip(alt[1])
        if (first == "") continue
        if (first in installed) queue[++tail] = first
        m = split(providers[first], via, " ")
        for (j = 1; j <= m; ++j) queue[++tail] = via[j]
      }
    }
    for (p in seen) print p
  }' "$tmp/listed" "$tmp/installed" | sort -u > "$tmp/covered"

# 4. Every file's package must be covered.
status=0
awk -F'\t' '
  function unmerged(path,  q) { q = path; if (q ~ /^\/usr\/(lib|lib64|bin|sbin)\//) sub(/^\/usr/, "", q); return q }
  FILENAME == ARGV[1] { owners[$1] = owners[$1] " " $2; next }
  FILENAME == ARGV[2] { covered[$1] = 1; next }
  {
    list = owners[$1] owners[$2] owners[unmerged($1)] owners[unmerged($2)]
    if (list == "") { print "FAIL: " $1 " is read by the build but belongs to no Debian package"; bad = 1; next }
    n = split(list, p, " ")
    ok = 0
    for (i = 1; i <= n; ++i) if (p[i] in covered) ok = 1
    if (ok) next
    bad = 1
    for (i = 1; i <= n; ++i) {
      if (p[i] in reported) continue
      reported[p[i]] = 1
      print "FAIL: the build reads " $1 " from package " p[i] ", which tools/setup.sh does not install: add " p[i] \
            " to its packages list (setup installs with --no-install-recommends, so a Recommends is not enough)"
    }
  }
  END { exit bad }' "$tmp/owner_of" "$tmp/covered" "$tmp/used" || status=1

if ((status == 0)); then
  echo "setup's $(wc -l < "$tmp/listed") packages cover the $(wc -l < "$tmp/used") files the build reads" \
       "(owned by $(cut -f2 "$tmp/owner_of" | sort -u | wc -l) packages; setup's dependency closure has" \
       "$(wc -l < "$tmp/covered"))"
fi
exit $status
