#!/usr/bin/python3
"""Where a keep/discard model's errors are, and how much it writes, from `matmem inspect --csv`.

Each CSV is one sequence of the keep/discard task through a trained MatDNC or MatNTM (`matmem inspect --checkpoint
DIR --items N --seed Q --csv F`). An input frame has r content rows, then the keep flag, the delimiter and the recall
channel (models/tasks/keep_discard.hpp). The steps with a target before the recall delimiter are the discard recall
(each discard sub-sequence copied back after its delimiter), those after it the keep recall (the keep sub-sequences
at the end). Per sequence:
  discard recall    bits wrong (an output above ½ against its target bit) over the discard recall's matrices, and
                    per matrix;
  keep recall       the same over the keep recall's;
  writes            the write weightings' total weight, every write head and step, against the input's keep and
                    discard frames (the steps before the recall delimiter with content and no target): a model that
                    writes one slot a frame writes as much weight as it has frames; one that writes only the keep
                    frames, about as much as those;
  rewrites          the writes (steps whose write weight is ½ or more, into their most weighted slot, the first of
                    equal ones) into a slot written before in the sequence, and how many of them find it freed (its
                    usage below ½ as the step writes; a MatDNC's file, which has the memory's usage): a memory that
                    frees each discard once recalled writes the next into the same slots;
  in use            the slots whose usage is ½ or more at the recall delimiter (a MatDNC's file): the keep frames'
                    when everything else was freed.
Printed as a Markdown table, a row a sequence and a row of means (a MatNTM's write weightings always sum to 1 a
step: its writes are every step's, whatever it stores).

    /usr/bin/python3 tools/keep_discard_phases.py CSV...
"""
import argparse
import collections

import inspect_csv


def fail(text):
    raise SystemExit(f"keep_discard_phases: {text}")


def read_sequence(path):
    """Inputs, outputs and targets by step ({(row, col): value}), the write weightings summed over the write heads
    by step ({slot: value}) and the memory's usage by step ({slot: value}; empty but for a MatDNC)."""
    frames = {s: collections.defaultdict(dict) for s in ("input", "output", "target")}
    writes = collections.defaultdict(lambda: collections.defaultdict(float))
    usage = collections.defaultdict(dict)
    for t, series, row, col, value in inspect_csv.rows(path, fail):
        if series in frames:
            frames[series][t][(row, col)] = value
        elif series.startswith("write") and series.endswith("/weighting"):
            writes[t][col] += value
        elif series == "usage":
            usage[t][col] = value
    if not frames["input"] or not frames["target"]:
        fail(f"{path}: no input or no target frames")
    return frames, writes, usage


def analyse(path):
    frames, writes, usage = read_sequence(path)
    inputs, outputs, targets = frames["input"], frames["output"], frames["target"]
    r = max(row for frame in inputs.values() for row, _ in frame) - 2  # content rows; then keep, delimiter, recall
    if r < 1:
        fail(f"{path}: input frames of {r + 2} rows: not keep/discard's content rows, keep flag, delimiter, recall")
    recall_at = next((t for t in sorted(inputs) if any(v for (row, _), v in inputs[t].items() if row == r + 2)), None)
    if recall_at is None:
        fail(f"{path}: no recall delimiter (row {r + 2} of an input frame): not a keep/discard sequence")
    out = {"keep frames": 0, "discard frames": 0, "writes": sum(sum(w.values()) for w in writes.values()),
           "rewrites": 0, "freed": 0 if usage else None,
           "in use": sum(v >= 0.5 for v in usage[recall_at].values()) if usage else None}
    written = set()
    for t in sorted(writes):
        if sum(writes[t].values()) < 0.5:
            continue
        slot = inspect_csv.most_weighted(writes[t])
        if slot in written:
            out["rewrites"] += 1
            if usage and usage[t].get(slot, 0.0) < 0.5:
                out["freed"] += 1
        written.add(slot)
    for phase in ("discard", "keep"):
        out[phase + " bits"] = 0
        out[phase + " matrices"] = 0
    for t in sorted(inputs):
        frame = inputs[t]
        if t in targets:
            if t not in outputs:
                fail(f"{path}: step {t} has a target and no output")
            phase = "keep" if t > recall_at else "discard"
            out[phase + " bits"] += sum(abs((outputs[t].get(k, 0.0) > 0.5) - v) for k, v in targets[t].items())
            out[phase + " matrices"] += 1
        elif t < recall_at and not any(v for (row, _), v in frame.items() if row == r + 1):
            keep = any(v for (row, _), v in frame.items() if row == r)
            out["keep frames" if keep else "discard frames"] += 1
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+", help="matmem inspect --csv files of keep/discard sequences")
    args = parser.parse_args(argv)
    per = [(path, analyse(path)) for path in args.csv]

    def per_matrix(bits, matrices):
        return f"{bits / matrices:.2f}" if matrices else "–"

    def count(value, form):
        return "–" if value is None else format(value, form)

    print("| sequence | discard recall: bits wrong (matrices; per matrix) "
          "| keep recall: bits wrong (matrices; per matrix) | writes: total weight (keep / discard frames) "
          "| rewrites (into freed slots) | in use at the recall delimiter |")
    print("|---|---|---|---|---|---|")
    for path, o in per:
        print(f"| {path} | {o['discard bits']:.0f} ({o['discard matrices']}; "
              f"{per_matrix(o['discard bits'], o['discard matrices'])}) | {o['keep bits']:.0f} ({o['keep matrices']}; "
              f"{per_matrix(o['keep bits'], o['keep matrices'])}) | {o['writes']:.2f} ({o['keep frames']} / "
              f"{o['discard frames']}) | {o['rewrites']} ({count(o['freed'], 'd')}) | {count(o['in use'], 'd')} |")
    n = len(per)
    mean = {k: None if any(o[k] is None for _, o in per) else sum(o[k] for _, o in per) / n for k in per[0][1]}
    print(f"| mean of {n} | {mean['discard bits']:.1f} ({mean['discard matrices']:.1f}; "
          f"{per_matrix(mean['discard bits'], mean['discard matrices'])}) | {mean['keep bits']:.1f} "
          f"({mean['keep matrices']:.1f}; {per_matrix(mean['keep bits'], mean['keep matrices'])}) | "
          f"{mean['writes']:.2f} ({mean['keep frames']:.1f} / {mean['discard frames']:.1f}) | {mean['rewrites']:.1f} "
          f"({count(mean['freed'], '.1f')}) | {count(mean['in use'], '.1f')} |")


if __name__ == "__main__":
    main()
