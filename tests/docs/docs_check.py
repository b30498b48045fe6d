#!/usr/bin/python3
"""Checks the Markdown documentation against the tree and the program (tests/docs/CMakeLists.txt registers
each check as a ctest test docs:<check>):

  docs_check.py links                  every relative link names a file that exists, and a heading there
  docs_check.py prose                  no paragraph of prose stands in two pages
  docs_check.py sizes                  README.md and the folder guides stay within their sizes
  docs_check.py plans                  every sweep plan a results page names exists and parses as JSON
  docs_check.py config-keys MATMEM     the key table of models/training/README.md is `train --help-config`'s keys
  docs_check.py registry MATMEM        models/README.md's list of models and tasks is the registry's
  docs_check.py run-files MATMEM       models/training/README.md's columns of metrics.csv are a run's
  docs_check.py snippets MATMEM PAGE   every code block of PAGE runs as written (see run_snippets)

Each prints what differs and exits 1 when a check fails."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\(([^)]+)\)\s*-->\s*$")


def pages():
    """The tracked Markdown pages (and new ones git does not ignore), relative to the root."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                             capture_output=True, text=True)
    except FileNotFoundError:  # no git on the machine (a fresh root has none): as outside a checkout
        out = None
    if out is not None and out.returncode == 0 and out.stdout.strip():
        names = out.stdout.split()
    else:  # not a git checkout, or no git: every .md below the root but the build trees
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.md") if "build" not in p.relative_to(ROOT).parts]
    return sorted(n for n in set(names) if (ROOT / n).is_file())


def without_code(text):
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading):
    """GitHub's anchor of a heading."""
    h = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(page):
    seen, out = {}, set()
    for line in without_code((ROOT / page).read_text()).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def check_links():
    bad = []
    for page in pages():
        text = without_code((ROOT / page).read_text())
        text = re.sub(r"`[^`\n]*`", "", text)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not (ROOT / file).exists():
                bad.append(f"{page}: link {target}: no such file {file}")
            elif anchor and file.endswith(".md") and anchor not in anchors(file):
                bad.append(f"{page}: link {target}: {file} has no heading #{anchor}")
    return bad


def paragraphs(page):
    """The page's paragraphs of prose: blank-line separated, not code, tables, headings, lists' bullets
    count as paragraphs of their own."""
    text = without_code((ROOT / page).read_text())
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    for block in re.split(r"\n\s*\n", text):
        for item in re.split(r"\n(?=\s*[-*] |\s*\d+\. )", block):
            lines = [l for l in item.splitlines() if l.strip() and not l.lstrip().startswith(("|", "#", "    "))]
            para = re.sub(r"\s+", " ", " ".join(lines)).strip()
            if len(para) >= 120:
                yield para


def check_prose():
    where = {}
    for page in pages():
        for para in paragraphs(page):
            where.setdefault(para, set()).add(page)
    return [f"in {' and '.join(sorted(p))}: {para[:100]}…" for para, p in where.items() if len(p) > 1]


def check_plans():
    bad, named = [], 0
    for page in pages():
        if "/results/" not in "/" + page:
            continue
        text = (ROOT / page).read_text()
        # models/plans/NAME.json, "plan `NAME`", "the `NAME` plan" (upper-case names are placeholders)
        names = set(re.findall(r"models/plans/([a-z0-9][a-z0-9.-]*?)\.json", text))
        names |= {a or b for a, b in re.findall(r"[Pp]lans? `([a-z0-9-]+)`|`([a-z0-9-]+)` plan", text)}
        for name in sorted(names):
            named += 1
            plan = ROOT / "models/plans" / f"{name}.json"
            if not plan.exists():
                bad.append(f"{page}: names the plan {name}, but {plan.relative_to(ROOT)} does not exist")
                continue
            try:
                if not isinstance(json.loads(plan.read_text()), dict):
                    bad.append(f"{plan.relative_to(ROOT)}: not a JSON object")
            except ValueError as e:
                bad.append(f"{plan.relative_to(ROOT)} (named by {page}): {e}")
    if named == 0:
        bad.append("no results page names a plan")
    return bad


LIMITS = {"README.md": 8192, "models/README.md": 30720, "tools/README.md": 20480, "ops/README.md": 15360}


def check_sizes():
    """The guides stay guides: at most these many bytes (the results live in results pages)."""
    return [f"{page}: {(ROOT / page).stat().st_size} bytes, more than {limit}" for page, limit in LIMITS.items()
            if (ROOT / page).stat().st_size > limit]


def table_column(page, header):
    """The first column, without backticks, of every table of the page whose header row starts `| header |`."""
    rows, inside = [], False
    for line in (ROOT / page).read_text().splitlines():
        if line.startswith(f"| {header} |"):
            inside = True
            continue
        if inside:
            if not line.startswith("|"):
                inside = False
                continue
            cell = line.split("|")[1].strip()
            if not set(cell) <= set("-: "):
                rows.append(cell.strip("`"))
    return rows


def run(matmem, *args):
    out = subprocess.run([matmem, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{matmem} {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout


def help_config_keys(matmem):
    """The keys `matmem train --help-config` lists: after the index of its sections and its header line
    `key  default  meaning`, a key at the start of each line not indented (an indented one continues a
    meaning), up to the blank line before the presets."""
    lines = run(matmem, "train", "--help-config").splitlines()
    header = next((k for k, line in enumerate(lines) if line.split()[:3] == ["key", "default", "meaning"]), None)
    if header is None or not lines[0].startswith("sections"):
        raise SystemExit("`matmem train --help-config` does not start with its index of sections and the header "
                         "line `key default meaning`")
    keys = []
    for line in lines[header + 1:]:
        if not line.strip():
            break
        if not line.startswith(" "):
            keys.append(line.split()[0])
    return keys


def differ(what, documented, actual, page):
    bad = []
    dup = sorted({k for k in documented if documented.count(k) > 1})
    if dup:
        bad.append(f"{page} lists {what} twice: {', '.join(dup)}")
    missing = sorted(set(actual) - set(documented))
    extra = sorted(set(documented) - set(actual))
    if missing:
        bad.append(f"{page} is missing {what} the program has: {', '.join(missing)}")
    if extra:
        bad.append(f"{page} lists {what} the program does not have: {', '.join(extra)}")
    if not actual:
        bad.append(f"the program listed no {what}")
    return bad


def check_config_keys(matmem):
    page = "models/training/README.md"
    return differ("config keys", table_column(page, "key"), help_config_keys(matmem), page)


def registry(matmem):
    """The registered models and tasks, as the refusal of an unknown name lists them (models/registry.cpp:
    `unknown model X (known: a, b, …)`)."""
    found = {}
    with tempfile.TemporaryDirectory(prefix="matmem-docs-") as tmp:
        for kind, option in (("models", "--model"), ("tasks", "--task")):
            out = subprocess.run([matmem, "train", option, "no_such_name", "--steps", "1", "--out", f"{tmp}/run"],
                                 capture_output=True, text=True, cwd=tmp)
            m = re.search(r"unknown (?:model|task) no_such_name \(known: ([^)]*)\)", out.stdout + out.stderr)
            if out.returncode == 0 or not m:
                raise SystemExit(f"`matmem train {option} no_such_name` did not list the registered {kind}:\n"
                                 + out.stdout + out.stderr)
            found[kind] = [n.strip() for n in m.group(1).split(",")]
    return found


def check_registry(matmem):
    page = "models/README.md"
    actual = registry(matmem)
    bad = []
    for kind, header in (("models", "model"), ("tasks", "task")):
        bad += differ(kind, table_column(page, header), actual[kind], page)
    return bad


def check_run_files(matmem):
    """The columns of metrics.csv as models/training/README.md's table lists them, against a short run's file."""
    page = "models/training/README.md"
    with tempfile.TemporaryDirectory(prefix="matmem-docs-") as tmp:
        run(matmem, "train", "--model", "matrnn", "--steps", "2", "--set", "log_every=1", "--set", "model.layers=3x3",
            "--set", "task.max_length=2", "--out", f"{tmp}/run")
        header = (pathlib.Path(tmp) / "run/metrics.csv").read_text().splitlines()[0].split(",")
    return differ("metrics.csv columns", table_column(page, "column"), header, page)


def code_blocks(page):
    """(language, code, skip reason or None, line) for every fenced block of the page, in order."""
    text = (ROOT / page).read_text()
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        yield m.group(1), m.group(2), skip.group(1) if skip else None, text.count("\n", 0, m.start()) + 1


RUN = {"sh", "bash", "shell"}
SHOWN = {"", "text", "console", "json", "cpp", "c++", "cmake", "python"}


def run_snippets(matmem, page):
    """Runs the page's sh blocks in order in one bash (set -e), in a fresh directory that holds links to the
    source tree's top-level folders and to the build (`build/`), with HOME there too, the build's matmem
    first on PATH and its Python module on PYTHONPATH. Output blocks (no language, text, console) are what the reader sees; C++ and Python blocks
    are compiled and run by the tests of their own (examples:readme_shows_examples, python:test_readme_examples);
    a block marked `<!-- docs-test: skip (reason) -->` is not run."""
    build = pathlib.Path(matmem).resolve().parent
    blocks = list(code_blocks(page))
    bad = [f"{page}:{line}: a ```{lang} block: neither run nor a kind the docs tests know" for lang, _, _, line in blocks
           if lang not in RUN | SHOWN]
    script = ["set -euo pipefail"]
    for lang, code, skip, line in blocks:
        if lang in RUN and not skip:
            script.append(f"echo '--- {page}:{line}'")
            script.append(code)
    if bad:
        return bad
    if not any(lang in RUN for lang, _, _, _ in blocks):
        return [f"{page}: no sh block"]
    if len(script) == 1:
        print(f"{page}: every sh block is marked not to run, each with its reason")
        return []
    with tempfile.TemporaryDirectory(prefix="matmem-docs-") as tmp:
        work = pathlib.Path(tmp)
        for top in ("runtime", "autodiff", "ops", "models", "tests", "tools", "CMakeLists.txt", "README.md"):
            (work / top).symlink_to(ROOT / top)
        (work / "build").symlink_to(build)
        env = dict(os.environ, HOME=str(work), PATH=f"{build}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        env.pop("MATMEM_PLUGINS", None)
        if (build / "python").is_dir():  # the module as tools/setup.sh --tests lets Python find it
            env["PYTHONPATH"] = str(build / "python")
        (work / "page.sh").write_text("\n".join(script) + "\n")
        out = subprocess.run(["bash", str(work / "page.sh")], cwd=work, env=env, capture_output=True, text=True)
        sys.stdout.write(out.stdout[-6000:])
        if out.returncode != 0:
            return [f"{page}: a block failed (exit {out.returncode}); the last block started is the last '---' line above:\n"
                    + out.stderr[-4000:]]
    return []


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    check, args = argv[1], argv[2:]
    if args:  # the matmem command, as an absolute path: some checks run it in a directory of their own
        args[0] = str(pathlib.Path(args[0]).resolve())
    bad = {"links": check_links, "prose": check_prose, "sizes": check_sizes, "plans": check_plans, "config-keys": check_config_keys,
           "registry": check_registry, "run-files": check_run_files, "snippets": run_snippets}[check](*args)
    for line in bad:
        print(line)
    print(f"{check}: {'FAILED' if bad else 'ok'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
