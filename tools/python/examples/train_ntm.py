"""Trains the bundled MatNTM on the copy task from Python and draws its learning curve to a PNG.

    /usr/bin/python3 tools/python/examples/train_ntm.py [--steps 300] [--out ntm_curve.png]
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import matmem  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=10, help="record the loss every N steps")
    ap.add_argument("--out", default="ntm_curve.png")
    args = ap.parse_args(argv)
    trainer = matmem.Trainer({"model": "matntm", "task": "copy", "steps": args.steps, "lr": 1e-3, "seed": 1,
                              "task.max_length": 5})
    steps, losses = [], []
    trainer.train(callback=lambda t, stats: (steps.append(t.steps_done), losses.append(stats["loss"])) and None,
                  every=args.every)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, losses)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (BCE per bit)")
    ax.set_title("MatNTM, copy task")
    fig.savefig(args.out, dpi=80)
    # Single steps swing with the sequence drawn (its length and bits): compare means of the first and last points.
    k = max(1, len(losses) // 5)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    print(f"{len(steps)} points, one every {args.every} steps; mean loss of the first {k} points {first:.4f}, "
          f"of the last {k} {last:.4f}; curve in {args.out}")
    return losses


if __name__ == "__main__":
    main()
