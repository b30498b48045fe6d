#!/usr/bin/python3
"""Where a priority-sort model's heads write and read (Graves et al. 2014, Figure 17), from `matmem inspect --csv`.

Each CSV is one sequence of the priority sort task through a trained NTM or MatNTM (`matmem inspect --checkpoint
DIR --items 20 --seed Q --csv F`): m input frames, the delimiter at step m, then the k output steps. Each head's
position at a step is its weighting's most weighted slot. Per sequence:
  write head W, by priority   Spearman's ρ between the priorities of the inputs and the slots W writes them to
                              (steps 0..m−1): ±1 when W places every input by its priority (Figure 17's writes),
                              near 0 when it walks the memory in time order;
  read head R, ascending      ρ between the output step q and the slot R reads at step m+1+q: +1 or −1 when R
                              walks the memory in one direction through the output (Figure 17's reads);
  R reads W's                 the share of output steps q at which R reads the slot W wrote the q-th highest-priority
                              input to (that slot + o, o in --offsets: a head may sit one slot off the write's;
                              the best o is printed): 1.00 when R reads the sorted inputs back in order; printed
                              for the write head each read head follows best (highest mean), every pair with --all;
  R frees what it reads       (a MatDNC's file, which has the memory's usage) the share of output steps but the last
                              at which the usage of the slot R reads falls to less than half at the next step: 1.00
                              when every read frees its slot (the free gates), so the allocation can reuse it.
The slots are taken modulo the memory's size (the weighting's columns); the priority and delimiter are the last
two rows of an input frame (models/tasks/priority_sort.hpp). Printed as a Markdown table: each measure's mean,
lowest and highest over the sequences, and its value on each.

    /usr/bin/python3 tools/sort_heads.py CSV... [--offsets -1,0,1] [--all]
"""
import argparse
import collections
import sys

import inspect_csv
from inspect_csv import most_weighted


def fail(text):
    raise SystemExit(f"sort_heads: {text}")


def read_sequence(path):
    """The inputs by step ({(row, col): value}), each head's weighting by step ({slot: value}) and the memory's
    usage by step ({slot: value}; empty but for a MatDNC)."""
    inputs = collections.defaultdict(dict)
    heads = collections.defaultdict(lambda: collections.defaultdict(dict))
    usage = collections.defaultdict(dict)
    for t, series, row, col, value in inspect_csv.rows(path, fail):
        if series == "input":
            inputs[t][(row, col)] = value
        elif series.endswith("/weighting") and series.startswith(("read", "write")):
            heads[series.split("/")[0]][t][col] = value
        elif series == "usage":
            usage[t][col] = value
    if not inputs:
        fail(f"{path}: no input frames")
    if not any(h.startswith("write") for h in heads) or not any(h.startswith("read") for h in heads):
        fail(f"{path}: no read and write weightings (a model without NTM heads?)")
    return inputs, heads, usage


def ranks(values):
    """Ranks from 0, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2
        i = j + 1
    return out


def spearman(a, b):
    """Spearman's ρ: Pearson's correlation of the ranks; 0 where either side is constant."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den > 0 else 0.0


def analyse(path, offsets):
    inputs, heads, usage = read_sequence(path)
    steps = max(inputs) + 1
    rows = max(r for frame in inputs.values() for r, _ in frame) + 1
    priority_row, delimiter_row = rows - 2, rows - 1
    delimiter = next((t for t in range(steps) if inputs[t].get((delimiter_row, 0), 0) == 1), None)
    if delimiter is None or delimiter < 2 or delimiter + 1 >= steps:
        fail(f"{path}: no delimiter frame between the inputs and the outputs (a priority sort sequence?)")
    m, k = delimiter, steps - delimiter - 1
    priority = [inputs[t].get((priority_row, 0), 0.0) for t in range(m)]
    slots = 1 + max(s for h in heads.values() for w in h.values() for s in w)
    for name, by_step in heads.items():
        if any(t not in by_step for t in range(steps)):
            fail(f"{path}: {name}'s weighting is missing at some of the {steps} steps")
    written = {h: [most_weighted(w[t]) for t in range(m)] for h, w in heads.items() if h.startswith("write")}
    read = {h: [most_weighted(w[t]) for t in range(m + 1, steps)] for h, w in heads.items() if h.startswith("read")}
    sorted_inputs = sorted(range(m), key=lambda i: (-priority[i], i))[:k]  # the target's order
    result = {}
    for w, at in written.items():
        result[(w, "by priority")] = (spearman(priority, at), None)
    for r, at in read.items():
        result[(r, "ascending")] = (spearman(list(range(k)), at), None)
        if usage and k > 1:
            if any(t not in usage for t in range(m + 1, steps)):
                fail(f"{path}: the usage is missing at some of the output steps")
            freed = sum(1 for q in range(k - 1)
                        if usage[m + 2 + q].get(at[q], 0.0) < 0.5 * usage[m + 1 + q].get(at[q], 0.0))
            result[(r, "frees what it reads")] = (freed / (k - 1), None)
        for w, wat in written.items():
            best = max(((sum(1 for q, i in enumerate(sorted_inputs) if at[q] == (wat[i] + o) % slots) / k, o)
                        for o in offsets), key=lambda x: (x[0], -abs(x[1])))
            result[(r, f"reads {w}'s")] = best
    return m, k, result


def head_key(name):
    kind = 0 if name.startswith("write") else 1
    return kind, int("".join(c for c in name if c.isdigit()) or 0)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+", help="matmem inspect --csv files of priority-sort sequences")
    parser.add_argument("--offsets", default="-1,0,1", help="slot offsets a read may sit from the write (-1,0,1)")
    parser.add_argument("--all", action="store_true", help="every read head against every write head")
    args = parser.parse_args(argv)
    try:
        offsets = [int(o) for o in args.offsets.split(",")]
    except ValueError:
        fail(f"--offsets {args.offsets}: whole numbers separated by commas, e.g. -1,0,1")
    per = [analyse(p, offsets) for p in args.csv]
    keys = sorted({k for _, _, r in per for k in r}, key=lambda k: (head_key(k[0]), k[1]))

    def mean(key):
        xs = [r[key][0] for _, _, r in per if key in r]
        return sum(xs) / len(xs)
    if not args.all:  # each read head's best-followed write head only
        best = {}
        for key in keys:
            if key[1].startswith("reads ") and (key[0] not in best or mean(key) > mean(best[key[0]])):
                best[key[0]] = key
        keys = [k for k in keys if not k[1].startswith("reads ") or best[k[0]] == k]
    print(f"{len(per)} sequences; inputs / outputs: {', '.join(f'{m} / {k}' for m, k, _ in per)}")
    print()
    print("| head | measure | mean | lowest | highest | per sequence |")
    print("|---|---|---|---|---|---|")
    for key in keys:
        values = [r[key] for _, _, r in per if key in r]
        xs = [v for v, _ in values]
        signed = key[1] in ("by priority", "ascending")  # correlations; the rest are shares
        each = ", ".join(f"{v:+.2f}" if signed else f"{v:.2f}" if o is None else f"{v:.2f} ({o:+d})"
                         for v, o in values)
        form = "{:+.2f}" if signed else "{:.2f}"
        print(f"| {key[0]} | {key[1]} | {form.format(mean(key))} | {form.format(min(xs))} | "
              f"{form.format(max(xs))} | {each} |")


if __name__ == "__main__":
    main(sys.argv[1:])
