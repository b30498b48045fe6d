#!/usr/bin/python3
"""tools/keep_discard_phases.py on hand-made `matmem inspect --csv` files whose figures are worked out below: the
bits wrong of the discard recall and of the keep recall (split at the recall delimiter), the content frames counted by
the frame's place, not its bits (an all-zero discard frame), the write weight summed over heads and steps, the
rewrites and those into a freed slot, the slots in use at the recall delimiter (and "–" for a file without usage),
the mean row, and the refusal of a file with no recall delimiter. Exits 1 naming what differs."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "tools", "keep_discard_phases.py")

# One content row of 2 columns, then the keep flag, the delimiter and the recall channel (rows 1, 2, 3):
#   t0, t1 keep frames; t2 their delimiter; t3, t4 discard frames (t4 all zero); t5 its delimiter;
#   t6, t7 its recall (targets 11 and 00; outputs .9 .2 -> 1 bit wrong, .6 .7 -> 2); t8 the recall delimiter;
#   t9, t10 the keep recall (targets 10 and 01; outputs .8 .1 -> 0, .4 .4 -> 1).
INPUTS = {0: ([1, 0], 1, 0, 0), 1: ([0, 1], 1, 0, 0), 2: ([0, 0], 1, 1, 0), 3: ([1, 1], 0, 0, 0),
          4: ([0, 0], 0, 0, 0), 5: ([0, 0], 0, 1, 0), 6: ([0, 0], 0, 0, 0), 7: ([0, 0], 0, 0, 0),
          8: ([0, 0], 0, 0, 1), 9: ([0, 0], 0, 0, 0), 10: ([0, 0], 0, 0, 0)}
TARGETS = {6: ([1, 1], [0.9, 0.2]), 7: ([0, 0], [0.6, 0.7]), 9: ([1, 0], [0.8, 0.1]), 10: ([0, 1], [0.4, 0.4])}
# write1 0.5 at t0 (two slots of .25: a write into slot 0, the first of equal ones), 0.5 at t1, 0.25 at t3 (no
# write: below ½), 0.9 into slot 0 at t6 and 0.7 into slot 1 at t9; write2 1.0 into slot 1 at t1: 3.85 in all. The
# writes: slot 0 (t0), slot 1 (t1: 1.5 of it), slot 0 again (t6), slot 1 again (t9): 2 rewrites; the usage makes
# slot 0 freed at t6 (0.2) and slot 1 not at t9 (0.8): 1 into a freed slot. At the recall delimiter (t8) the usage
# is 0.1 and 0.9: 1 slot in use.
WRITES = {"write1": {0: [0.25, 0.25], 1: [0.5, 0.0], 3: [0.25, 0.0], 6: [0.9, 0.0], 9: [0.0, 0.7]},
          "write2": {1: [0.0, 1.0]}}
USAGE = {6: [0.2, 0.9], 8: [0.1, 0.9], 9: [0.1, 0.8]}


def write_sequence(path, recall=True, usage=True):
    with open(path, "w") as f:
        f.write("time,series,row,col,value\n")
        for t, (content, keep, delim, rec) in INPUTS.items():
            for col in range(2):
                f.write(f"{t},input,0,{col},{content[col]}\n")
                f.write(f"{t},input,1,{col},{keep}\n")
                f.write(f"{t},input,2,{col},{delim}\n")
                f.write(f"{t},input,3,{col},{rec if recall else 0}\n")
            if t in TARGETS:
                target, output = TARGETS[t]
                for col in range(2):
                    f.write(f"{t},target,0,{col},{target[col]}\n")
                    f.write(f"{t},output,0,{col},{output[col]}\n")
            for head, at in WRITES.items():
                for slot in range(2):
                    f.write(f"{t},{head}/weighting,0,{slot},{at.get(t, [0.0, 0.0])[slot]}\n")
            if usage:
                for slot in range(2):
                    f.write(f"{t},usage,0,{slot},{USAGE.get(t, [1.0, 1.0])[slot]}\n")
    return path


def run(*args):
    return subprocess.run(["/usr/bin/python3", SCRIPT, *args], capture_output=True, text=True)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        a = write_sequence(os.path.join(d, "a.csv"))
        n = write_sequence(os.path.join(d, "n.csv"), usage=False)  # a MatNTM's file: no usage
        out = run(a, a, n)
        if out.returncode != 0:
            raise SystemExit(f"keep_discard_phases failed: {out.stderr}")
        rows = [line for line in out.stdout.splitlines() if line.startswith("| ")][1:]
        want = [f"| {a} | 3 (2; 1.50) | 1 (2; 0.50) | 3.85 (2 / 2) | 2 (1) | 1 |"] * 2 + [
            f"| {n} | 3 (2; 1.50) | 1 (2; 0.50) | 3.85 (2 / 2) | 2 (–) | – |",
            "| mean of 3 | 3.0 (2.0; 1.50) | 1.0 (2.0; 0.50) | 3.85 (2.0 / 2.0) | 2.0 (–) | – |"]
        for got, expected in zip(rows, want):
            if got != expected:
                failures.append(f"row {got}, want {expected}")
        if len(rows) != len(want):
            failures.append(f"{len(rows)} rows, want {len(want)}")
        b = write_sequence(os.path.join(d, "b.csv"), recall=False)
        out = run(b)
        if out.returncode == 0 or "no recall delimiter" not in out.stderr:
            failures.append(f"a file without a recall delimiter: exit {out.returncode}, {out.stderr!r}")
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("keep_discard_phases: every figure as worked out")


if __name__ == "__main__":
    main()
