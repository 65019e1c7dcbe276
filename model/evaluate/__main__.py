"""One evaluator with modes: `python3 -m model.evaluate MODE ARGS...` runs the mode's step
(each also runs alone as `python3 -m model.evaluate.<module>`):

    held-out  model.evaluate.held_out  held-out documents of the training sources, BM25 beside (step 5)
    dev       model.evaluate.dev       the dev set of legal questions, what recipes are chosen by (5d)
    store     model.evaluate.store     the dev set through SQLite stores (sqlite-vec, FTS5), as docs/models.md
The GPU kit's probe (checkpoints without a folder) is model/gpu/dev_probe.py: it needs the trainer.
"""
import importlib
import sys

MODES = {"held-out": "model.evaluate.held_out", "dev": "model.evaluate.dev", "store": "model.evaluate.store"}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in MODES:
        raise SystemExit(f"python3 -m model.evaluate MODE ...: MODE is one of {', '.join(MODES)} (got {argv[0] if argv else 'none'})")
    sys.argv = [f"model.evaluate {argv[0]}", *argv[1:]]
    importlib.import_module(MODES[argv[0]]).main()


if __name__ == "__main__":
    main()
