"""The transformer trainer's inputs (model/train/transformer.py): the vocabulary and a fast
tokenizer for it, the evaluation sets, the MLM windows, the mined negatives and the learned query
prefix piece."""
import collections
import json
import time

import numpy as np
import torch

from model.common.legal_data import WordPiece

PAD, CLS, SEP, MASK = 0, 101, 102, 103


class Logger:
    def __init__(self, t0):
        self.t0 = t0

    def __call__(self, message):
        print(f"[{time.time() - self.t0:6.0f}s] {message}", flush=True)


def load_vocab(path):
    with open(path, encoding="utf-8") as f:
        ids = json.load(f)["model"]["vocab"]
    vocab = [None] * len(ids)
    for piece, i in ids.items():
        vocab[i] = piece
    assert vocab[CLS] == "[CLS]" and vocab[SEP] == "[SEP]" and vocab[MASK] == "[MASK]" and vocab[PAD] == "[PAD]"
    return vocab


class Tokenizer:
    """The served tokenizer.json through the Rust `tokenizers` package when it is installed (it
    is checked against the Python WordPiece on a sample), otherwise the Python WordPiece. Where
    the two differ, `exact` callers (tuning and evaluation) get the Python one; MLM pretraining
    takes the fast one regardless, as a rare different piece does not matter there."""

    def __init__(self, path, vocab, log, sample):
        self.py = WordPiece(vocab)
        self.fast, self.agrees = None, False
        try:
            from tokenizers import Tokenizer as Fast
        except ImportError:
            log("tokenizer: Python WordPiece (no `tokenizers` package)")
            return
        self.fast = Fast.from_file(path)
        self.fast.no_truncation()
        self.fast.no_padding()
        sample = [r[1] for r in sample] + [r[2][:3000] for r in sample]
        got = [e.ids for e in self.fast.encode_batch(sample)]
        bad = sum(a != self.py.encode(t) for a, t in zip(got, sample))
        self.agrees = bad == 0
        log(f"tokenizer: Rust tokenizers {'agrees' if self.agrees else f'differs on {bad}'} on {len(sample)} sample texts")

    def encode(self, texts, max_tokens=None, chunk_chars=None, exact=True):
        """Ids with [CLS] … [SEP]; with max_tokens, truncation keeps the final [SEP]."""
        if chunk_chars:
            texts = [t[:chunk_chars] for t in texts]
        if self.fast is not None and (self.agrees or not exact):
            out = []
            for start in range(0, len(texts), 4096):
                out.extend(e.ids for e in self.fast.encode_batch(texts[start:start + 4096]))
        else:
            out = [self.py.encode(t) for t in texts]
        if max_tokens:
            out = [ids if len(ids) <= max_tokens else ids[:max_tokens - 1] + [SEP] for ids in out]
        return out


def sample_rows(rows):
    """The first row of each source and ~200 spread over the data: where the tokenizers are compared."""
    first = {}
    for r in rows:
        first.setdefault(r[0], r)
    return list(first.values()) + rows[:: max(1, len(rows) // 200)]


def evaluation_sets(rows, held_out, left_out, smoke, only=None):
    """Held-out documents per source, and every pair of a left-out source; with `only`, the
    held-out documents of those sources alone."""
    by_source = collections.defaultdict(list)
    for row in held_out:
        if only is None or row[0] in only:
            by_source[row[0]].append(row)
    sets = dict(sorted(by_source.items()))
    for source in sorted(left_out if only is None else ()):  # the whole left-out source, not only its held-out part
        sets[f"all-{source}"] = [r for r in rows if r[0] == source]
    if smoke:
        sets = {k: v[:300] for k, v in sets.items()}
    return sets


def mlm_windows(rows, train, tok, seq, log):
    """Every distinct training text (whole, up to 20,000 characters) and heading, tokenised and
    packed into windows of `seq` tokens, each [CLS] … [SEP]."""
    seen, texts = set(), []
    for g in train:
        for t in (rows[g][2], rows[g][1]):
            if t not in seen:
                seen.add(t)
                texts.append(t)
    stream = []
    for ids in tok.encode(texts, exact=False):
        stream.extend(ids[1:])  # content + [SEP] as document separator
    body = seq - 1
    n = len(stream) // body
    windows = torch.tensor(stream[: n * body], dtype=torch.int32).view(n, body)
    windows = torch.cat([torch.full((n, 1), CLS, dtype=torch.int32), windows], dim=1)
    windows[:, -1] = SEP
    log(f"MLM corpus: {len(texts)} texts, {len(stream) / 1e6:.1f} M tokens, {n} windows of {seq}")
    return windows


def load_negatives(path, rows, train):
    """Per training pair (by position in `train`), its mined negatives as positions in `train`."""
    if not path:
        return [[] for _ in train]
    with np.load(path) as data:
        assert int(data["rows"]) == len(rows), "negatives were mined from another version of the data"
        mined = np.concatenate([data["bm25"], data["model"]], axis=1)[train].tolist()
    pos = {g: i for i, g in enumerate(train)}
    return [sorted({pos[j] for j in cand if j in pos}) for cand in mined]


def query_prefix(wordpiece, piece):
    """The ids of --query-prefix: one vocabulary piece, kept whole."""
    if not piece:
        return []
    if piece not in wordpiece.ids:
        raise SystemExit(f"--query-prefix {piece!r} is not a piece of the vocabulary (e.g. [unused0])")
    return [wordpiece.ids[piece]]
