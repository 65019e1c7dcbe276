"""Trains lexembed's transformer legal-2-embedder: a small BERT encoder pretrained from scratch
with masked-language modelling on the legal text of data/legal-pairs, then tuned for retrieval
with InfoNCE (in-batch and mined hard negatives, generic headings masked, Matryoshka prefixes).

    python3 model/train_transformer.py --data ../shared/data/legal-pairs \
        --tokenizer models/legal-2-embedder-static/tokenizer.json \
        --negatives model/work/negatives.npz --out model/work/transformer

Meant for a CUDA GPU (bf16); on a CPU use --smoke to check the pipeline. Phase lengths are given
in steps, or in seconds (--mlm-steps 0 --mlm-seconds S, --ct-steps 0 --ct-seconds S): then the
learning-rate schedule follows wall-clock progress and training.json records the steps that
fitted, so a rerun can fix them with --mlm-steps/--ct-steps. The defaults are the shipped
model's: its first run (6,508 MLM steps, 482 contrastive steps, the other flags as defaulted
here), then a second contrastive phase from that checkpoint, as it ran:
    ... --init <out>/checkpoint.pt --mlm-steps 0 --ct-steps 1929
(model/TRANSFORMER.md, run C; models/legal-2-embedder/training.json has both runs' arguments).
Writes <out>/checkpoint.pt (fp32 state dict + config), training.json and evaluation.json (the
held-out split of model/evaluate.py, BM25 beside the model). model/export_transformer.py turns
the checkpoint into a lexembed model folder.
"""
import argparse
import collections
import json
import multiprocessing as mp
import os
import random
import time

import numpy as np
import torch
from torch.nn import functional as F

from bert import Bert, MlmHead, mean_pool, pad_table
from evaluate import bm25_source, build_source, model_source, print_report
from questions import QueryMaker
from legal_data import SAMPLINGS, WordPiece, data_fingerprint, epoch_counts, epoch_sample, is_held_out, load_pairs, sources_of

PAD, CLS, SEP, MASK = 0, 101, 102, 103
RESUME_FILE = "resume.pt"


def main():
    args = parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if device.type == "cuda":  # cuDNN's attention failed once mid-run ("mha_graph.execute"); flash/efficient do not
        torch.backends.cuda.enable_cudnn_sdp(False)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    log = Logger(t0)

    rows = list(load_pairs(args.data))
    left_out = set(sources_of(args.leave_out))
    train = [g for g, (s, _, _, d) in enumerate(rows) if not is_held_out(s, d) and s not in left_out]
    held_out = [rows[g] for g, (s, _, _, d) in enumerate(rows) if is_held_out(s, d)]
    if args.smoke:
        train = train[::max(1, len(train) // 3000)]
    log(f"pairs: {len(rows)} in all, {len(train)} for training (left out: {sorted(left_out) or 'none'})")

    if args.threads:
        torch.set_num_threads(args.threads)
    # BM25 on the evaluation sets runs in other processes while the GPU trains.
    eval_sets = evaluation_sets(rows, held_out, left_out, args.smoke, set(sources_of(args.eval_sources)) if args.eval_sources else None)
    if not args.no_eval:
        pool = mp.get_context("spawn").Pool(min(len(eval_sets), max(1, (os.cpu_count() or 2) // 4)))
        bm25_jobs = {name: pool.apply_async(bm25_source, (subset,)) for name, subset in eval_sets.items()}

    vocab = load_vocab(args.tokenizer)
    tok = Tokenizer(args.tokenizer, vocab, log, sample_rows(rows))
    if args.init:
        ckpt = torch.load(args.init, map_location="cpu")
        c = ckpt["config"]
        args.layers, args.hidden, args.heads = c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"]
        args.intermediate, args.max_tokens = c["intermediate_size"], c["max_position_embeddings"]
    if args.init_onnx:
        from onnx_weights import load_bert
        model = load_bert(args.init_onnx, dropout=args.dropout)
        c = model.config
        args.layers, args.hidden, args.heads = c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"]
        args.intermediate, args.max_tokens = c["intermediate_size"], c["max_position_embeddings"]
        args.matryoshka = [d for d in args.matryoshka if d <= args.hidden]
        log(f"started from the served weights of {args.init_onnx}")
    else:
        model = Bert(len(vocab), args.hidden, args.layers, args.heads, args.intermediate, args.max_tokens, args.dropout)
    if args.init:
        model.load_state_dict({k: v.float() for k, v in ckpt["state_dict"].items()})
        log(f"started from {args.init}")
    model = model.to(device)
    log(f"model: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, FFN {args.intermediate}: "
        f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters")
    info = {"recipe": vars(args), "data_sha256": data_fingerprint(args.data), "train_pairs": len(train), "held_out_pairs": len(held_out),
            "vocab_size": len(vocab), "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
            "torch": torch.__version__}

    if args.mlm_steps or args.mlm_seconds:
        windows = mlm_windows(rows, train, tok, args.mlm_seq, log)
        info["mlm"] = pretrain(model, windows, args, device, log)
    if args.ct_steps or args.ct_seconds:
        info["contrastive"] = tune(model, rows, train, tok, args, device, log)
        if info["contrastive"].get("stopped_for_time"):
            log(f"stopped at --stop-after {args.stop_after:.0f} s with {info['contrastive']['steps_done']} steps done; "
                f"run the same command again to resume from {os.path.join(args.out, RESUME_FILE)}")
            return
    info["seconds"] = round(time.time() - t0)
    if args.half_checkpoint:  # small enough to carry back from a GPU machine
        torch.save({"config": model.config, "state_dict": {k: v.half().cpu() for k, v in model.state_dict().items()},
                    "vocab": vocab}, os.path.join(args.out, "checkpoint-fp16.pt"))
    torch.save({"config": model.config, "state_dict": {k: v.float().cpu() for k, v in model.state_dict().items()},
                "vocab": vocab}, os.path.join(args.out, "checkpoint.pt"))

    if args.no_eval:
        with open(os.path.join(args.out, "training.json"), "w") as f:
            json.dump(info, f, indent=2, default=str)
        log(f"done (no evaluation): {args.out}")
        return
    model.eval()
    embed_fn = torch_embed_fn(model, lambda texts: tok.encode(texts, args.max_tokens, chunk_chars=args.max_tokens * 12), device)
    results = {}
    for name, subset in eval_sets.items():
        queries, corpus, _ = build_source(subset)
        results[name] = {"queries": len(queries), "corpus": len(corpus),
                         "model": model_source(subset, embed_fn), "bm25": bm25_jobs[name].get()}
    pool.close()
    held = {k: v for k, v in results.items() if not k.startswith("all-")}
    print_report(held)
    for name in [k for k in results if k.startswith("all-")]:
        r = results[name]
        log(f"{name}: queries {r['queries']}, corpus {r['corpus']}: BM25 nDCG@10 {r['bm25']['ndcg@10']:.3f} "
            f"model {r['model']['ndcg@10']:.3f}; R@100 {r['bm25']['recall@100']:.3f} / {r['model']['recall@100']:.3f}")
    for dims in args.report_dims:
        prefix = {s: model_source(eval_sets[s], embed_fn, dims)["ndcg@10"] for s in held if s in eval_sets}
        log(f"Matryoshka {dims}: " + ", ".join(f"{s} {v:.3f}" for s, v in prefix.items()))
        held.setdefault("matryoshka", {})[str(dims)] = prefix
    results.update(held)
    with open(os.path.join(args.out, "evaluation.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump(info, f, indent=2, default=str)
    log(f"done: {args.out}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="folder with the legal-pairs *.jsonl.gz files")
    p.add_argument("--tokenizer", required=True, help="tokenizer.json of the legal WordPiece (kept as is)")
    p.add_argument("--negatives", help="hard negatives from model/mine_negatives.py (none: in-batch only)")
    p.add_argument("--out", required=True)
    p.add_argument("--leave-out", default="", help="comma-separated sources or genres left out of all training "
                                                   "(leave-one-genre-out test: 'contracts', 'eu-law')")
    p.add_argument("--sampling", choices=SAMPLINGS, default="sqrt",
                   help="how sources are weighed in contrastive epochs (legal_data.epoch_sample)")
    p.add_argument("--cap", type=int, default=20000, help="pairs per source per epoch with --sampling cap")
    p.add_argument("--init", help="checkpoint.pt to start from (its architecture wins over the flags)")
    p.add_argument("--init-onnx", help="a served folder (hybrid or transformer) whose transformer weights to start from "
                                       "(model/onnx_weights.py; its architecture wins over the flags)")
    p.add_argument("--question-templates", type=float, default=0.0,
                   help="contrastive: share of pairs whose query is put in a question template (model/questions.py)")
    p.add_argument("--question-crops", type=float, default=0.0,
                   help="contrastive: share of pairs whose query is a question-framed span of their own text")
    p.add_argument("--query-prefix", default="",
                   help="a vocabulary piece (e.g. [unused0]) put after [CLS] of every training query: a learned "
                        "retrieval/query prefix token; serve it as that task's prompt (documents get none)")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast on a CPU too (CUDA always uses it)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--checkpoint-every", type=float, default=300,
                   help="contrastive, with --ct-steps: seconds between resumable checkpoints (<out>/resume.pt); a rerun of the same "
                        "command resumes from it")
    p.add_argument("--stop-after", type=float, default=0,
                   help="contrastive: stop (resumably) after this many seconds of this process, e.g. before a session ends")
    p.add_argument("--eval-sources", default="",
                   help="score only these sources' or genres' held-out documents (e.g. a leave-one-genre-out run's genre)")
    p.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation (score with evaluate_dev.py after export)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--intermediate", type=int, default=1024)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--max-tokens", type=int, default=512, help="positions, and max input tokens served")
    p.add_argument("--mlm-steps", type=int, default=6508, help="MLM steps (default: what the shipped model's run did on an H100; 0: use --mlm-seconds)")
    p.add_argument("--mlm-seconds", type=float, default=0, help="time budget for MLM (used when --mlm-steps is 0)")
    p.add_argument("--mlm-batch", type=int, default=128)
    p.add_argument("--mlm-seq", type=int, default=512)
    p.add_argument("--mlm-lr", type=float, default=1e-3)
    p.add_argument("--mask-prob", type=float, default=0.2)
    p.add_argument("--ct-steps", type=int, default=482, help="contrastive steps (default: the shipped model's first phase; 0: use --ct-seconds)")
    p.add_argument("--ct-seconds", type=float, default=0, help="time budget for contrastive tuning")
    p.add_argument("--ct-batch", type=int, default=512)
    p.add_argument("--ct-lr", type=float, default=2e-4)
    p.add_argument("--query-tokens", type=int, default=128)
    p.add_argument("--text-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--matryoshka", default="32,64,128,256")
    p.add_argument("--report-dims", default="64,128", help="Matryoshka prefixes to report after training")
    p.add_argument("--hybrid-parts", help="model/hybrid_parts.py's .npz: the served hybrid's static and lexical parts, for --hybrid-loss")
    p.add_argument("--hybrid-loss", type=float, default=0.0,
                   help="share of the loss taken on the hybrid's score (the transformer beside the fixed static and lexical "
                        "parts, each text's served shares), so the transformer learns what those parts miss; 0: off, 1: only it")
    p.add_argument("--hybrid-temperature", type=float, default=0.01,
                   help="temperature of the hybrid's InfoNCE (its transformer term carries a share of ~0.2)")
    p.add_argument("--snapshots", type=int, default=0,
                   help="write N fp16 checkpoints (snapshot-K.pt) evenly over the contrastive phase, the last at its end")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--half-checkpoint", action="store_true", help="also write checkpoint-fp16.pt")
    p.add_argument("--smoke", action="store_true", help="tiny data subset, to check the pipeline on a CPU")
    args = p.parse_args()
    args.matryoshka = [int(d) for d in args.matryoshka.split(",") if d and int(d) <= args.hidden]
    if args.hidden not in args.matryoshka:
        args.matryoshka.append(args.hidden)
    args.report_dims = [int(d) for d in args.report_dims.split(",") if d]
    if args.hybrid_loss and not args.hybrid_parts:
        p.error("--hybrid-loss needs --hybrid-parts (model/hybrid_parts.py --out)")
    if not 0 <= args.hybrid_loss <= 1:
        p.error(f"--hybrid-loss is a share between 0 and 1, got {args.hybrid_loss}")
    return args


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


def pretrain(model, windows, args, device, log):
    head = MlmHead(model).to(device)
    params = list(model.parameters()) + [p for n, p in head.named_parameters() if not n.startswith("word_embeddings")]
    opt = torch.optim.AdamW(params, lr=args.mlm_lr, betas=(0.9, 0.98), weight_decay=0.01,
                            **({"fused": True} if device.type == "cuda" else {}))
    windows = windows.to(device)
    vocab_size = model.config["vocab_size"]
    gen = torch.Generator(device=device).manual_seed(args.seed)
    model.train()

    def step(lr):
        for g in opt.param_groups:
            g["lr"] = lr
        idx = torch.randint(0, windows.shape[0], (args.mlm_batch,), device=device, generator=gen)
        ids = windows[idx].long()
        special = (ids == CLS) | (ids == SEP)
        masked = (torch.rand(ids.shape, device=device, generator=gen) < args.mask_prob) & ~special
        labels = ids[masked]
        r = torch.rand(ids.shape, device=device, generator=gen)
        inputs = ids.clone()
        inputs[masked & (r < 0.8)] = MASK
        rand_tok = masked & (r >= 0.8) & (r < 0.9)
        inputs[rand_tok] = torch.randint(1000, vocab_size, (int(rand_tok.sum()),), device=device, generator=gen)
        with autocast(device, args.bf16):
            hidden = model(inputs, torch.ones_like(inputs))
            logits = head(hidden[masked])
            loss = F.cross_entropy(logits.float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss

    result = run_schedule(args.mlm_steps, args.mlm_seconds, step, args.mlm_lr, device, log, "MLM")
    result["tokens_seen"] = result["steps_done"] * args.mlm_batch * args.mlm_seq
    result["epochs"] = round(result["tokens_seen"] / windows.numel(), 2)
    return result


def tune(model, rows, train, tok, args, device, log):
    queries = tok.encode([rows[g][1] for g in train], args.query_tokens)
    texts = tok.encode([rows[g][2] for g in train], args.text_tokens, chunk_chars=args.text_tokens * 12)
    prefix = query_prefix(tok.py, args.query_prefix)
    q_ids, q_len = pad_table([ids[:1] + prefix + ids[1:] for ids in queries])
    t_ids, t_len = pad_table(texts)
    q_ids, q_len, t_ids, t_len = (x.to(device) for x in (q_ids, q_len, t_ids, t_len))
    # Equal keys are not negatives of each other: headings case-folded, texts exactly.
    key_of, text_of = {}, {}
    q_key = torch.tensor([key_of.setdefault(rows[g][1].lower().strip(), len(key_of)) for g in train], device=device)
    t_key = torch.tensor([text_of.setdefault(rows[g][2], len(text_of)) for g in train], device=device)
    negatives = load_negatives(args.negatives, rows, train)
    log(f"contrastive: {len(train)} pairs, hard negatives for {sum(1 for n in negatives if n)} of them")
    opt = torch.optim.AdamW(model.parameters(), lr=args.ct_lr, weight_decay=0.01,
                            **({"fused": True} if device.type == "cuda" else {}))
    rng = random.Random(args.seed)
    maker = QueryMaker(tok.py, random.Random(args.seed + 1), max_tokens=args.query_tokens)
    if prefix:
        log(f"contrastive: every query starts [CLS] {args.query_prefix} (id {prefix[0]})")
    augment = args.question_templates > 0 or args.question_crops > 0
    fixed = None
    if args.hybrid_loss:
        from hybrid_parts import FixedParts
        fixed = FixedParts(args.hybrid_parts, device)
        log(f"contrastive: {args.hybrid_loss:.2f} of the loss on the hybrid's score ({args.hybrid_parts}, temperature {args.hybrid_temperature})")
    by_source = collections.defaultdict(list)
    for i, g in enumerate(train):
        by_source[rows[g][0]].append(i)
    order, cursor = [], [0]
    model.train()

    def rows_of(ids_table, lengths, idx):
        return ids_table[idx, :int(lengths[idx].max())].long()

    def pool(ids):
        mask = (ids != PAD).long()
        return mean_pool(model(ids, mask), mask)

    def step(lr):
        for g in opt.param_groups:
            g["lr"] = lr
        if cursor[0] + args.ct_batch > len(order):
            order[:] = epoch_sample(by_source, args.sampling, args.cap, rng)
            rng.shuffle(order)
            cursor[0] = 0
        batch = order[cursor[0]:cursor[0] + args.ct_batch]
        cursor[0] += args.ct_batch
        neg = [rng.choice(negatives[i]) if negatives[i] else rng.randrange(len(train)) for i in batch]
        b = torch.tensor(batch, device=device)
        cols = torch.cat([b, torch.tensor(neg, device=device)])
        with autocast(device, args.bf16):
            if augment:
                made = [maker.make(rows[train[i]][0], queries[i], texts[i], args.question_templates, args.question_crops) for i in batch]
                made = [ids[:1] + prefix + ids[1:] for ids in made]
                ids = pad_table(made)[0].long().to(device)
            else:
                ids = rows_of(q_ids, q_len, b)
            t_rows = rows_of(t_ids, t_len, cols)
            q, t = pool(ids).float(), pool(t_rows).float()
        positive = torch.arange(len(batch), device=device)
        # Mask columns that share the row's heading or text, except the row's own positive.
        false_neg = (q_key[b][:, None] == q_key[cols][None, :]) | (t_key[b][:, None] == t_key[cols][None, :])
        false_neg[positive, positive] = False
        back_mask = false_neg[:, :len(batch)].T
        loss = 0.0
        for d in args.matryoshka:
            qn = F.normalize(q[:, :d], dim=-1)
            tn = F.normalize(t[:, :d], dim=-1)
            logits = (qn @ tn.T / args.temperature).masked_fill(false_neg, -1e4)
            back = (tn[:len(batch)] @ qn.T / args.temperature).masked_fill(back_mask, -1e4)
            loss = loss + F.cross_entropy(logits, positive) + F.cross_entropy(back, positive)
        loss = loss / (2 * len(args.matryoshka))
        if fixed is not None:
            h = fixed.score(F.normalize(q, dim=-1), F.normalize(t, dim=-1), fixed.encode(ids), fixed.encode(t_rows, document=True)) / args.hybrid_temperature
            hybrid = (F.cross_entropy(h.masked_fill(false_neg, -1e4), positive)
                      + F.cross_entropy(h[:, :len(batch)].T.masked_fill(back_mask, -1e4), positive)) / 2
            loss = (1 - args.hybrid_loss) * loss + args.hybrid_loss * hybrid
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    resume = os.path.join(args.out, RESUME_FILE)

    def save_state(done):
        state = {"model": model.state_dict(), "opt": opt.state_dict(), "done": done, "order": order, "cursor": cursor[0],
                 "rng": rng.getstate(), "maker_rng": maker.rng.getstate(), "torch_rng": torch.get_rng_state(),
                 "ct_steps": args.ct_steps}
        torch.save(state, resume + ".tmp")
        os.replace(resume + ".tmp", resume)
        log(f"contrastive: resumable checkpoint at step {done} ({resume})")

    start = 0
    if os.path.exists(resume):
        state = torch.load(resume, map_location=device, weights_only=False)
        if state["ct_steps"] != args.ct_steps:
            raise SystemExit(f"{resume} was written by a run of --ct-steps {state['ct_steps']}, not {args.ct_steps}: "
                             "use the same command to resume, or another --out to start afresh")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        order[:], cursor[0], start = state["order"], state["cursor"], state["done"]
        rng.setstate(state["rng"])
        maker.rng.setstate(state["maker_rng"])
        torch.set_rng_state(state["torch_rng"])
        log(f"contrastive: resumed at step {start} of {args.ct_steps} from {resume}")
    elif args.ct_seconds and not args.ct_steps and args.stop_after:
        raise SystemExit("--stop-after needs a step-based schedule (to resume it): give --ct-steps")
    snapshots = [k / args.snapshots for k in range(1, args.snapshots)]  # the last: after the loop

    def snapshot(done, progress):
        while snapshots and progress >= snapshots[0]:
            k = args.snapshots - len(snapshots)
            snapshots.pop(0)
            write_half(model, os.path.join(args.out, f"snapshot-{k}.pt"), {"step": done, "progress": round(progress, 3)})
            log(f"contrastive: snapshot {k} of {args.snapshots} at step {done}")
    result = run_schedule(args.ct_steps, args.ct_seconds, step, args.ct_lr, device, log, "contrastive",
                          start=start, checkpoint_every=args.checkpoint_every if args.ct_steps else 0,
                          save=save_state, stop_after=args.stop_after, on_step=snapshot if args.snapshots else None)
    if args.snapshots and not result.get("stopped_for_time"):
        write_half(model, os.path.join(args.out, f"snapshot-{args.snapshots}.pt"), {"step": result["steps_done"], "progress": 1.0})
    if not result.get("stopped_for_time") and args.ct_steps:
        save_state(result["steps_done"])
    epoch = sum(epoch_counts({s: len(m) for s, m in by_source.items()}, args.sampling, args.cap).values())
    result["epochs"] = round(result["steps_done"] * args.ct_batch / epoch, 2)
    return result


def write_half(model, path, extra):
    """An fp16 checkpoint (config + state dict), small enough to carry back from a GPU machine."""
    torch.save({"config": model.config, "state_dict": {k: v.detach().half().cpu() for k, v in model.state_dict().items()}, **extra},
               path + ".tmp")
    os.replace(path + ".tmp", path)


def query_prefix(wordpiece, piece):
    """The ids of --query-prefix: one vocabulary piece, kept whole."""
    if not piece:
        return []
    if piece not in wordpiece.ids:
        raise SystemExit(f"--query-prefix {piece!r} is not a piece of the vocabulary (e.g. [unused0])")
    return [wordpiece.ids[piece]]


def load_negatives(path, rows, train):
    """Per training pair (by position in `train`), its mined negatives as positions in `train`."""
    if not path:
        return [[] for _ in train]
    with np.load(path) as data:
        assert int(data["rows"]) == len(rows), "negatives were mined from another version of the data"
        mined = np.concatenate([data["bm25"], data["model"]], axis=1)[train].tolist()
    pos = {g: i for i, g in enumerate(train)}
    return [sorted({pos[j] for j in cand if j in pos}) for cand in mined]


def run_schedule(steps, seconds, step, peak_lr, device, log, name, start=0, checkpoint_every=0, save=None, stop_after=0, on_step=None):
    """Linear warm-up (first 6 %) and linear decay to zero, over `steps` steps or, when steps is
    0, over `seconds` of wall-clock time (progress = elapsed / seconds; the steps that fitted are
    returned, so a rerun can fix them with --mlm-steps/--ct-steps). A step schedule can start at
    step `start` (resumed), call `save(done)` every `checkpoint_every` seconds, and stop after
    `stop_after` seconds (saving first; the result says stopped_for_time)."""
    begin, last, done = time.time(), 0.0, start
    saved_at = begin
    loss = None
    while True:
        progress = done / steps if steps else (time.time() - begin) / seconds
        if progress >= 1:
            break
        if on_step:
            on_step(done, progress)
        now = time.time()
        if save and stop_after and now - begin >= stop_after:
            save(done)
            return {"steps_done": done, "stopped_for_time": True, "seconds": round(now - begin)}
        if save and checkpoint_every and now - saved_at >= checkpoint_every:
            save(done)
            saved_at = now
        lr = peak_lr * min((progress + 1e-3) / 0.06, (1 - progress) / 0.94)
        loss = step(lr)
        if done % (200 if device.type == "cuda" else 20) == 0:
            last = float(loss.detach())
            log(f"{name} step {done} ({progress:.0%}) lr {lr:.2e} loss {last:.4f}")
        done += 1
    last = float(loss.detach()) if loss is not None else last
    sync(device)
    elapsed = time.time() - begin
    log(f"{name}: {done - start} steps in {elapsed:.0f} s ({elapsed / max(1, done - start) * 1000:.0f} ms per step), last loss {last:.4f}")
    return {"steps_done": done, "budget": f"{steps} steps" if steps else f"{seconds:.0f} s",
            "last_loss": last, "seconds": round(elapsed)}


def torch_embed_fn(model, encode, device, batch=256):
    """Embeds as lexembed serves: `encode(texts)` gives ids (truncated keeping [SEP]), then mean
    pooling and L2 normalisation, in fp32. Full vectors are cached per text list, so Matryoshka
    prefixes reuse them."""
    cache = {}

    def run(texts, dims=None):
        key = tuple(texts)
        if key not in cache:
            cache[key] = embed_full(texts)
        out = torch.from_numpy(cache[key])
        if dims:
            out = out[:, :dims]
        return F.normalize(out, dim=-1).numpy()

    @torch.no_grad()
    def embed_full(texts):
        ids = encode(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = None
        for start in range(0, len(order), batch):
            chunk = order[start:start + batch]
            x, _ = pad_table([ids[i] for i in chunk])
            x = x.long().to(device)
            m = (x != PAD).long()
            pooled = mean_pool(model(x, m), m).float().cpu()
            if out is None:
                out = torch.zeros((len(ids), pooled.shape[1]))
            out[chunk] = pooled
        return out.numpy()
    return run


def autocast(device, cpu_bf16=False):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_bf16)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
