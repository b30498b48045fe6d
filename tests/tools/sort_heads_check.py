#!/usr/bin/python3
"""tools/sort_heads.py on hand-made `matmem inspect --csv` files whose measures are worked out below: Spearman's ρ of
the write slots against the priorities and of the read slots against the output steps, the share of output steps a
read head reads the slot of the q-th highest-priority input (with an offset, modulo the slots), the best write head
per read head, --all, the share of reads that free their slot (a MatDNC's usage), and the refusal of a file that is
not a priority sort. Exits 1 naming what differs."""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "tools", "sort_heads.py")
SLOTS = 8


def write_sequence(path, priorities, heads, delimiter=True, usage=None):
    """Frames of 3 rows (content, priority, delimiter) x 2 columns; m inputs, the delimiter, then the outputs.
    heads: {name: [slot at each step]}, each weighting 0.9 on that slot; usage: [{slot: value} at each step]
    (a MatDNC's file; slots not given are 0)."""
    m = len(priorities)
    steps = len(next(iter(heads.values())))
    with open(path, "w") as f:
        f.write("time,series,row,col,value\n")
        for t in range(steps):
            for col in range(2):
                f.write(f"{t},input,0,{col},{1 if t < m and col == 0 else 0}\n")
                f.write(f"{t},input,1,{col},{priorities[t] if t < m else 0}\n")
                f.write(f"{t},input,2,{col},{1 if delimiter and t == m else 0}\n")
            for name, at in heads.items():
                for slot in range(SLOTS):
                    f.write(f"{t},{name}/weighting,0,{slot},{0.9 if slot == at[t] else 0.0125}\n")
            if usage:
                for slot in range(SLOTS):
                    f.write(f"{t},usage,0,{slot},{usage[t].get(slot, 0.0)}\n")
    return path


def run(*args):
    return subprocess.run(["/usr/bin/python3", SCRIPT, *args], capture_output=True, text=True)


def main():
    bad = []
    with tempfile.TemporaryDirectory() as dir:
        # Priorities 0.5, -0.2, 0.9, 0.1: the target's order is inputs 2, 0, 3 (k = 3 outputs of m = 4).
        # write1 puts input i at 4 + its priority's rank: slots 6, 4, 7, 5 (ρ +1); write2 walks 0, 1, 2, 3 in time
        # (ranks 2, 0, 3, 1 against 0..3: Σd² = 10, ρ = 1 - 60/60 = 0). Steps 4 (delimiter) to 7 (outputs).
        prio = [0.5, -0.2, 0.9, 0.1]
        w1 = [6, 4, 7, 5, 0, 0, 0, 0]
        w2 = [0, 1, 2, 3, 0, 0, 0, 0]
        # read1 reads write1's slots of inputs 2, 0, 3: 7, 6, 5 (ρ -1, all 3 right at offset 0); in the second
        # sequence 7, 6, 0 (2 of 3). read2 reads write2's slots of 2, 0, 3 one slot down: 1, -1 -> 7 (modulo 8), 2
        # (ranks 0, 2, 1: ρ 0.5; 3 of 3 at offset -1); against write1's 7, 6, 5 it hits only 6 + 1 = 7 (1 of 3).
        r1a = [0, 0, 0, 0, 0, 7, 6, 5]
        r1b = [0, 0, 0, 0, 0, 7, 6, 0]
        r2 = [0, 0, 0, 0, 0, 1, 7, 2]
        a = write_sequence(os.path.join(dir, "a.csv"), prio, {"write1": w1, "write2": w2, "read1": r1a, "read2": r2})
        b = write_sequence(os.path.join(dir, "b.csv"), prio, {"write1": w1, "write2": w2, "read1": r1b, "read2": r2})
        out = run(a, b)
        if out.returncode != 0:
            raise SystemExit(f"sort_heads failed: {out.stderr}")
        want = [
            "| write1 | by priority | +1.00 | +1.00 | +1.00 | +1.00, +1.00 |",
            "| write2 | by priority | +0.00 | +0.00 | +0.00 | +0.00, +0.00 |",
            "| read1 | ascending | -1.00 | -1.00 | -1.00 | -1.00, -1.00 |",
            "| read1 | reads write1's | 0.83 | 0.67 | 1.00 | 1.00 (+0), 0.67 (+0) |",
            "| read2 | ascending | +0.50 | +0.50 | +0.50 | +0.50, +0.50 |",
            "| read2 | reads write2's | 1.00 | 1.00 | 1.00 | 1.00 (-1), 1.00 (-1) |",
        ]
        for line in want:
            if line not in out.stdout:
                bad.append(f"missing row {line}")
        for line in ("read1 | reads write2's", "read2 | reads write1's"):
            if line in out.stdout:
                bad.append(f"{line} printed without --all (each read head's best write head only)")
        if "2 sequences; inputs / outputs: 4 / 3, 4 / 3" not in out.stdout:
            bad.append("missing the sequences line")
        every = run(a, b, "--all").stdout
        for line in ("| read2 | reads write1's | 0.33 | 0.33 | 0.33 | 0.33 (+1), 0.33 (+1) |",
                     "| read1 | reads write2's | 0.00 |"):
            if line not in every:
                bad.append(f"--all: missing row {line}")
        # Without the offsets -1 and +1, read2 never reads write2's slots.
        narrow = run(a, "--all", "--offsets", "0").stdout
        if "| read2 | reads write2's | 0.00 | 0.00 | 0.00 | 0.00 (+0) |" not in narrow:
            bad.append("--offsets 0: read2 should read none of write2's slots")
        # A MatDNC's file (a usage series): read1 reads slots 7, 6, 5 at steps 5, 6, 7. Slot 7's usage 0.9 at step 5
        # falls to 0.4 at step 6 (below half: freed); slot 6's 0.8 at step 6 is 0.5 at step 7 (not below half). The
        # last output step has no next step: 1 of 2. Without a usage series the measure is not printed (a above).
        use = [{} for _ in range(5)] + [{7: 0.9, 6: 0.8}, {7: 0.4, 6: 0.8}, {7: 0.4, 6: 0.5}]
        e = write_sequence(os.path.join(dir, "e.csv"), prio, {"write1": w1, "read1": r1a}, usage=use)
        frees = run(e).stdout
        if "| read1 | frees what it reads | 0.50 | 0.50 | 0.50 | 0.50 |" not in frees:
            bad.append(f"usage: read1 frees 1 of 2 read slots, got {frees}")
        if "frees what it reads" in out.stdout:
            bad.append("frees what it reads printed for files without a usage series")
        # Refusals: no delimiter frame, no heads, bad offsets, a missing file.
        c = write_sequence(os.path.join(dir, "c.csv"), prio, {"write1": w1, "read1": r1a}, delimiter=False)
        d = write_sequence(os.path.join(dir, "d.csv"), prio, {"h1": w1})
        for args, text in (([c], "no delimiter frame"), ([d], "no read and write weightings"),
                           ([a, "--offsets", "x"], "--offsets x"), ([os.path.join(dir, "none.csv")], "none.csv")):
            refused = run(*args)
            if refused.returncode == 0 or text not in refused.stderr:
                bad.append(f"{args}: want a refusal naming '{text}', got {refused.returncode}: {refused.stderr}")
    if bad:
        print("\n".join(bad))
        return 1
    print("sort_heads: every measure as worked out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
