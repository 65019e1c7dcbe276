"""The fixed parts of a served hybrid (the static table and the lexical part v2) in torch, so the
transformer can be trained on — and scored by — the hybrid's own score (model/train/transformer.py
--hybrid-parts, model/gpu/dev_probe.py):

    score(q, d) = Σ_k sqrt(w_k(q) · w_k(d)) · cos_k(q, d)      k ∈ {transformer, static, lexical}

with each text's shares w(text) by its length (add_lexical.Shares) — the dot product of two served
vectors, whose Matryoshka rotation is orthogonal and leaves it unchanged. Where the folder has a
document form (model/graph/document_form.py, v4.3 on), passages are encoded as the server embeds
`task: retrieval/document`: the lexical part keeps g = min(|l_raw| / c, g_max) of its length and
the whole product is divided by Mx, so the score is the served query · document product but for
the slack component the rotation's last column drops (1 of 1,792; model/graph/document_form.py measured it).

    python3 -m model.train.hybrid_parts --model models/legal-2-embedder --out parts.npz [--check]

writes the tables (the graph's own initialisers) to one .npz a GPU machine can carry; --check
compares the torch parts with the served graph's own parts (before its rotation; no cache needed) on
a sample of dev texts.
"""
import argparse
import json
import os

import numpy as np
import torch
from torch.nn import functional as F


def export(folder, out):
    """The folder's static table (int8 + row scale), lexical tables and shares, to `out`."""
    import onnx
    from onnx import numpy_helper
    from model.rules.tables import read_bm25, read_canonical, read_tables
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(os.path.join(folder, "onnx", "model.onnx")).graph.initializer
            if t.name in ("static.weight_int8", "static.weight_row_scale")}
    bucket, weight, avg_len, _ = read_tables(folder)
    k1, b = read_bm25(folder)
    canonical = read_canonical(folder)
    from model.rules.document_form import form_constants
    with open(os.path.join(folder, "training.json")) as f:
        record = json.load(f)["hybrid"]
    shares = record["shares"]
    # the document form's constants (c, g_max, Mx²), where the folder has one
    form = {} if "document_form" not in record else dict(zip(("form_c", "form_g_max", "form_m_x2"), map(np.float32, form_constants(record))))
    np.savez(out, **form, static_int8=init["static.weight_int8"], static_scale=init["static.weight_row_scale"].astype(np.float32),
             bucket=bucket.astype(np.int64), weight=weight.astype(np.float32), avg_len=np.float32(avg_len),
             k1=np.float32(k1), b=np.float32(b), long=np.array(shares["long"], np.float32),
             short=np.array(shares["short"], np.float32), lengths=np.array(shares["lengths"], np.float32),
             canonical=np.arange(len(weight), dtype=np.int64) if canonical is None else canonical.astype(np.int64))


class FixedParts:
    """The static and lexical parts of a batch of padded ids (0 = padding), as unit rows, and the
    texts' shares; everything without gradients."""

    def __init__(self, path, device):
        t = np.load(path)
        self.static = torch.from_numpy(t["static_int8"].astype(np.float32) * t["static_scale"]).to(device)
        self.bucket = torch.from_numpy(t["bucket"]).to(device)
        self.weight = torch.from_numpy(t["weight"]).to(device)
        # the lexical part's stem classes (identity for a folder without them, or an older export)
        self.canonical = torch.from_numpy(t["canonical"] if "canonical" in t.files else np.arange(len(t["weight"]), dtype=np.int64)).to(device)
        self.buckets = int(t["bucket"].max()) + 1
        self.avg_len, self.k1, self.b = float(t["avg_len"]), float(t["k1"]), float(t["b"])
        self.long, self.short = torch.from_numpy(t["long"]).to(device), torch.from_numpy(t["short"]).to(device)
        self.lengths = [float(x) for x in t["lengths"]]
        # (c, g_max, Mx²) of the folder's document form, or None (an older folder or export)
        self.form = tuple(float(t[k]) for k in ("form_c", "form_g_max", "form_m_x2")) if "form_c" in t.files else None

    @torch.no_grad()
    def encode(self, ids, document=False):
        """(static unit rows, lexical rows, shares rows) of padded ids (B, L): the query form, or with
        `document` the folder's document form (the lexical row g times a unit row, and the shares
        divided by Mx², so score()'s sqrt(w_q · w_d) carries the served 1 / Mx)."""
        ids = ids.long()
        mask = (ids != 0).float()
        static = F.normalize((self.static[ids] * mask[..., None]).sum(1), dim=-1)
        ids = self.canonical[ids]  # the lexical part counts stem classes
        w = self.weight[ids] * mask
        counted = (w != 0).float()
        length = counted.sum(1)
        # term frequency per position: how often the position's piece occurs in its row
        same = (ids[:, :, None] == ids[:, None, :]) & (counted[:, :, None] > 0)
        tf = same.float().sum(2)
        sat = tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length[:, None] / self.avg_len))
        # each distinct piece once: its first position carries it
        earlier = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool, device=ids.device).tril(-1)
        first = (counted > 0) & ~(same & earlier).any(2)
        value = torch.where(first, w * sat, torch.zeros_like(w))
        lexical = torch.zeros((ids.shape[0], self.buckets), device=ids.device).scatter_add_(1, self.bucket[ids], value)
        raw = lexical.norm(dim=-1, keepdim=True)
        lexical = F.normalize(lexical, dim=-1)
        t = ((length - self.lengths[0]) / (self.lengths[1] - self.lengths[0])).clamp(0, 1)[:, None]
        shares = (1 - t) * self.short + t * self.long
        if document and self.form is not None:
            c, g_max, m_x2 = self.form
            lexical = lexical * (raw / c).clamp(max=g_max)
            shares = shares / m_x2
        return static, lexical, shares

    @staticmethod
    def score(transformer_q, transformer_d, q_parts, d_parts):
        """The hybrid's score matrix (Bq, Bd) from unit transformer rows and encode()'s parts."""
        (sq, lq, wq), (sd, ld, wd) = q_parts, d_parts
        coef = lambda k: torch.sqrt(wq[:, k:k + 1] * wd[:, k][None, :])
        return coef(0) * (transformer_q @ transformer_d.T) + coef(1) * (sq @ sd.T) + coef(2) * (lq @ ld.T)


def check(folder, parts_path, samples=300):
    """The torch parts against the served graph's own parts (its "matryoshka.parts", before the
    rotation: matryoshka.graph_parts) on the first `samples` dev texts of each task and kind."""
    from model.evaluate.dev import served_ids
    from model.evaluate.served import graph_parts
    from model.common.bert import pad_table
    with open(os.path.join(folder, "training.json")) as f:
        record = json.load(f)["hybrid"]
    split, buckets = record["transformer_dims"], record["lexical"]["buckets"]
    unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)  # noqa: E731
    fixed = FixedParts(parts_path, "cpu")
    worst = {}
    for task, _, _, _, ids_of in served_ids(folder):
        for kind, ids in ids_of.items():
            served = graph_parts(folder, ids[:samples])
            s, l, _ = fixed.encode(pad_table(ids[:samples])[0])
            for name, mine, theirs in (("static", s, unit(served[:, split:-buckets])), ("lexical", l, unit(served[:, -buckets:]))):
                worst[f"{task} {kind} {name}"] = float((mine.numpy() * theirs).sum(1).min())
    for k, v in worst.items():
        print(f"{k:<40} min cosine {v:.6f}")
    return min(worst.values()) if worst else 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a served hybrid folder with the lexical part v2")
    p.add_argument("--out", required=True, help="the .npz to write")
    p.add_argument("--check", action="store_true", help="compare with the served parts on dev texts")
    args = p.parse_args()
    export(args.model, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB)")
    if args.check:
        worst = check(args.model, args.out)
        if worst < 0.999:
            raise SystemExit(f"the torch parts differ from the served ones (min cosine {worst:.6f})")


if __name__ == "__main__":
    main()
