#!/usr/bin/python3
"""tools/stability_table.py on hand-made metrics.csv files whose numbers are worked out below: the first step
below 1 bit, each collapse's first and last step and highest mean, the final and best means, the largest gradient
norm, the seconds summed over a resumption, the verdicts, --cost xent, --at; a missing or empty run directory
refused. Exits 1 naming what differs."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "tools", "stability_table.py")


def write_run(dir, name, bits, xent=None, norms=None, seconds=None, skipped="0"):
    run = os.path.join(dir, name)
    os.makedirs(run)
    with open(os.path.join(run, "metrics.csv"), "w") as f:
        f.write("step,seconds,loss,bits_per_sequence,grad_norm,frames,skipped,xent_bits\n")
        for i, b in enumerate(bits):
            x = xent[i] if xent else 2 * b
            g = norms[i] if norms else 1.0
            s = seconds[i] if seconds else i + 1
            f.write(f"{1000 * (i + 1)},{s},0.5,{b},{g},10,{skipped if i + 1 == len(bits) else 0},{x}\n")
    return run


def table(runs, *args):
    out = subprocess.run(["/usr/bin/python3", SCRIPT, *runs, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"stability_table failed: {out.stderr}")
    return out.stdout


def main():
    bad = []
    with tempfile.TemporaryDirectory() as dir:
        # Rows of 1,000 steps, a window of 4 rows. Full-window means from step 4,000: 10, 7.625, 5.25, 2.875, 0.5
        # (first below 1 at 8,000), 2.375, 4.25, 6.125, 8, 6.05 (a collapse from 11,000 to 13,000, highest 8),
        # 4.1, 2.15, 0.2 (final and best, at 16,000). Resumed after row 8: seconds 8 + 8.
        a = write_run(dir, "a", [10] * 4 + [0.5] * 4 + [8] * 4 + [0.2] * 4, norms=[1] * 9 + [2.5e9] + [1] * 6,
                      seconds=list(range(1, 9)) * 2, skipped="3")
        b = write_run(dir, "b", [50.0] * 6)
        # Means 3, 2.375, 1.75, 1.125, 0.5: below 1 at the last row. The cross-entropy (6, then 1.5) never is.
        c = write_run(dir, "c", [3.0] * 4 + [0.5] * 4, xent=[6.0] * 4 + [1.5] * 4)
        out = table([a, b, c], "--window", "4000")
        want = {
            f"| {a} | 16,000 | 8,000 | 1: 11,000–13,000 (8.00) | 0.20 | 0.20 (16,000) | – | 2.5e+09 | 3 | recovered "
            "| 16 |",
            f"| {b} | 6,000 | – | 0 | 50.00 | 50.00 (4,000) | – | 1 | 0 | not solved | 6 |",
            f"| {c} | 8,000 | 8,000 | 0 | 0.50 | 0.50 (8,000) | – | 1 | 0 | solved | 8 |",
        }
        for line in want:
            if line not in out:
                bad.append(f"missing row {line}")
        if "not solved: 1, recovered: 1, solved: 1" not in out:
            bad.append("missing the counts line")
        # A window of 2 rows: means 0.5 from 2,000 (first below 1), 4.75, 9 at 6,000, 4.75, 0.5 … 0.5, 4.75, 9, 9 at
        # 12,000–13,000, 4.75, then 0.5: two collapses, recovered.
        d = write_run(dir, "d", [0.5] * 4 + [9] * 2 + [0.5] * 4 + [9] * 3 + [0.5] * 4)
        two = table([d], "--window", "2000")
        row = (f"| {d} | 17,000 | 2,000 | 2: 6,000–6,000 (9.00), 12,000–13,000 (9.00) | 0.50 | 0.50 (2,000) | – | 1 | "
               "0 | recovered | 17 |")
        if row not in two:
            bad.append(f"two collapses: missing row {row}")
            print(two)
        xent = table([c], "--window", "4000", "--cost", "xent")
        row = f"| {c} | 8,000 | – | 0 | 1.50 | 1.50 (8,000) | – | 1 | 0 | not solved | 8 |"
        if row not in xent:
            bad.append(f"--cost xent: missing row {row}")
        # --at: the means at 8,000 (0.5), at the first window ending at 12,500 or later (13,000: 6.05), none at 20,000.
        at = table([a], "--window", "4000", "--at", "8000,12500,20000")
        row = f"| 3 | recovered | 16 | 0.50 / 6.05 / – |"
        if "| mean at 8,000 / 12,500 / 20,000 |" not in at or row not in at:
            bad.append(f"--at: missing the column or row ending {row}")
        # A missing run directory and one that has logged nothing: refused naming the directory, nothing printed.
        os.makedirs(os.path.join(dir, "empty"))
        for missing, why in ((os.path.join(dir, "nowhere"), "is not a directory"),
                             (os.path.join(dir, "empty"), "has no metrics.csv")):
            r = subprocess.run(["/usr/bin/python3", SCRIPT, a, missing], capture_output=True, text=True)
            if r.returncode == 0 or r.stdout or f"{missing} {why}" not in r.stderr:
                bad.append(f"{missing}: want exit 1, nothing on stdout and '{why}' on stderr; got {r.returncode}, "
                           f"{r.stdout!r}, {r.stderr!r}")
        if bad:
            print(out + xent + at)
    for b in bad:
        print(f"stability_table: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
