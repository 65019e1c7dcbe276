"""Learns the lexical part's weight of each word piece contrastively on the legal-pairs training
split (issue 54, item 1: "per-term weights learned contrastively, one scalar per vocabulary entry,
against idf"). The lexical part (model/graph/lexical.py) weighs a distinct piece p of a text as

    x_p = w_p · sat(tf_p, L)        sat(tf, L) = tf·(k1 + 1) / (tf + k1·(1 − b + b·L/avg_len))

with w_p = idf(p)^½ (no training). Here w_p = idf(p)^½ · exp(δ_p), δ learned with in-batch
InfoNCE over the cosine of the unhashed vectors (query ↔ text, both directions, false negatives
masked as model/train/static.py masks them) and an L2 pull of δ towards 0 (--reg), so a piece the
training pairs say little about keeps its idf. Pieces with idf 0 (special, [unusedN]) stay 0.

    python3 -m model.train.term_weights --data ../shared/data/legal-pairs \
        --tokenizer models/legal-2-embedder --out model/work/term-weights.npz

writes the weights (and a copy at every --save-every steps: the run checkpoints, and a stopped run
resumes from its last copy with --resume). model/graph/lexical.py --term-weights FILE builds the
lexical part from them instead of idf^½.
"""
import argparse
import collections
import os
import random
import shutil
import time

import numpy as np
import torch

from model.common.folder import needs, WORK
from model.rules.bm25 import B, IDF_POWER, K1, piece_statistics
from model.rules.sparse_weights import sparse_vector
from model.common.tokenizer_files import load_tokenizer
from model.common.legal_data import SAMPLINGS, epoch_sample, split_pairs
from model.data.questions import QueryMaker
from model.sparse.stem_classes import stem_classes
from model.train.static import encode_cached, key_ids


def saturated(batch_ids, idf, avg_len, k1=K1, b=B, canonical=None):
    """(row, piece, sat) of every distinct counted piece (stem class, with `canonical`) of every
    text in the batch: the sparse vectors' rule (add_lexical.sparse_vector, weighting tf)."""
    rows, pieces, sats = [], [], []
    for r, ids in enumerate(batch_ids):
        uniq, sat = sparse_vector(ids, idf, avg_len, k1, b, canonical=canonical)
        rows.append(np.full(len(uniq), r))
        pieces.append(uniq)
        sats.append(sat)
    return (torch.from_numpy(np.concatenate(rows)), torch.from_numpy(np.concatenate(pieces)),
            torch.from_numpy(np.concatenate(sats)).float())


def unit_values(rows, pieces, sats, weight, n, fixed_norm=None):
    """The texts' weighted values, each text a unit vector (or, with fixed_norm, divided by it)."""
    values = sats * weight[pieces]
    if fixed_norm:
        return values / fixed_norm
    norm = torch.zeros(n).index_add(0, rows, values * values).clamp_min(1e-12).sqrt()
    return values / norm[rows]


def similarities(q, t, weight, n, vocab_size, document_norm=None):
    """Cosines of every query with every text in the batch (n × n), through the text side dense;
    with document_norm, the texts are not normalised but divided by it (the document form,
    model/graph/document_form.py, without its cap)."""
    qr, qp, qs = q
    tr, tp, ts = t
    qv = unit_values(qr, qp, qs, weight, n)
    tv = unit_values(tr, tp, ts, weight, n, document_norm)
    dense_t = torch.zeros(vocab_size, n).index_put((tp, tr), tv)  # pieces × texts
    return torch.zeros(n, n).index_add(0, qr, qv[:, None] * dense_t[qp])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="the legal-pairs folder")
    p.add_argument("--tokenizer", required=True, help="a model folder whose tokenizer.json the weights are for")
    p.add_argument("--out", required=True, help="the .npz to write (weight per piece, the recipe)")
    p.add_argument("--batch", type=int, default=1024)
    # The defaults are the shipped run's (the model card: chosen on the dev set)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--reg", type=float, default=3e-3, help="L2 weight on log(w / idf^½), summed over pieces")
    p.add_argument("--sampling", choices=SAMPLINGS, default="sqrt")
    p.add_argument("--cap", type=int, default=20000)
    p.add_argument("--question-templates", type=float, default=0.25,
                   help="share of queries put in a question template (model/data/questions.py), as the static part trains")
    p.add_argument("--question-crops", type=float, default=0.25)
    p.add_argument("--train-tokens", type=int, default=384, help="text truncation (the token cache's)")
    p.add_argument("--cache", default=os.path.join(WORK, "tokens"))
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--keep-steps", action="store_true", help="also keep each copy as OUT.stepN.npz (to choose the step)")
    p.add_argument("--resume", action="store_true", help="start from --out's last copy")
    p.add_argument("--k1", type=float, default=K1, help=f"BM25 k1 of the saturation (default {K1})")
    p.add_argument("--b", type=float, default=B, help=f"BM25 b (default {B})")
    p.add_argument("--document-norm", type=float, help="score texts unnormalised, divided by this (the document form's c) instead of as cosines")
    p.add_argument("--stems", action="store_true", help="count each stem class of whole-word pieces as one term (model/sparse/stem_classes.py; "
                   "for model/graph/lexical.py --stems)")
    p.add_argument("--seed", type=int, default=20261126)
    args = p.parse_args()
    needs("model.train.term_weights", (args.data, "pairs"), (os.path.join(args.tokenizer, "tokenizer.json"), "tokenizer"))

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, int(os.environ.get("THREADS", os.cpu_count() or 1))))
    t0 = time.time()
    tok = load_tokenizer(args.tokenizer)
    canonical = stem_classes(tok.ids) if args.stems else None
    idf, _, avg_len = piece_statistics(tok, args.data, 512, canonical=canonical)
    train, _ = split_pairs(args.data)
    queries, texts = encode_cached(args.cache, tok, train, args.train_tokens)
    query_key = key_ids([q.lower().strip() for _, q, _, _ in train])
    text_key = key_ids([t for _, _, t, _ in train])
    by_source = collections.defaultdict(list)
    for i, row in enumerate(train):
        by_source[row[0]].append(i)
    questions = QueryMaker(tok, random.Random(args.seed + 1))
    print(f"{len(train):,} training pairs, {len(tok.vocab):,} pieces ({time.time() - t0:.0f} s)", flush=True)

    base = torch.tensor(idf ** IDF_POWER, dtype=torch.float32)
    delta = torch.zeros(len(base), requires_grad=True)
    start = 0
    if args.resume and os.path.exists(args.out):
        saved = np.load(args.out)
        delta.data = torch.from_numpy(saved["delta"]).float()
        start = int(saved["step"])
        print(f"resumed at step {start}", flush=True)
    optimizer = torch.optim.Adam([delta], lr=args.lr)

    def save(step):
        w = (base * torch.exp(delta)).detach().numpy()
        extra = {}
        if canonical is not None:  # only a class's smallest piece is trained: its pieces share its weight
            w, extra = w[canonical], {"canonical": canonical}
        tmp = args.out + ".tmp.npz"
        np.savez(tmp, weight=w, delta=delta.detach().numpy(), step=step, idf=idf, recipe=repr(vars(args)), **extra)
        os.replace(tmp, args.out)
        if args.keep_steps:
            shutil.copyfile(args.out, f"{args.out[:-4]}.step{step}.npz")

    order, step = [], start
    epoch_rng = random.Random(args.seed + start)
    while step < args.steps:
        if len(order) < args.batch:
            order = epoch_sample(by_source, args.sampling, args.cap, epoch_rng)
            epoch_rng.shuffle(order)
        idx, order = order[:args.batch], order[args.batch:]
        qids = [questions.make(train[i][0], queries[i], texts[i], args.question_templates, args.question_crops) for i in idx]
        n = len(idx)
        weight = base * torch.exp(delta)
        s = similarities(saturated(qids, idf, avg_len, args.k1, args.b, canonical),
                         saturated([texts[i] for i in idx], idf, avg_len, args.k1, args.b, canonical),
                         weight, n, len(base), args.document_norm)
        qk, tk = torch.from_numpy(query_key[idx]), torch.from_numpy(text_key[idx])
        false_negative = ((qk[:, None] == qk[None, :]) | (tk[:, None] == tk[None, :])) & ~torch.eye(n, dtype=torch.bool)
        logits = (s / args.temperature).masked_fill(false_negative, -1e4)
        target = torch.arange(n)
        loss = (torch.nn.functional.cross_entropy(logits, target) + torch.nn.functional.cross_entropy(logits.T, target)) / 2
        total = loss + args.reg * (delta * delta).sum()
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        step += 1
        if step % 20 == 0:
            print(f"step {step}/{args.steps} loss {loss.item():.4f} |delta| {delta.detach().abs().mean():.4f} ({time.time() - t0:.0f} s)", flush=True)
        if step % args.save_every == 0 or step == args.steps:
            save(step)
    print(f"wrote {args.out} ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
