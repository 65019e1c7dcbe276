"""Trains lexembed's transformer legal-2-embedder: a small BERT encoder pretrained from scratch
with masked-language modelling on the legal text of data/legal-pairs, then tuned for retrieval
with InfoNCE (in-batch and mined hard negatives, generic headings masked, Matryoshka prefixes).

    python3 -m model.train.transformer --data ../shared/data/legal-pairs \
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
held-out split of model/evaluate/held_out.py, BM25 beside the model). model/export/transformer.py turns
the checkpoint into a lexembed model folder.
"""
import argparse
import json
import multiprocessing as mp
import os
import random
import time

import numpy as np
import torch

from model.common.folder import needs
from model.common.bert import Bert, torch_embed_fn
from model.common.legal_data import SAMPLINGS, data_fingerprint, is_held_out, load_pairs, sources_of
from model.evaluate.held_out import bm25_source, build_source, model_source, print_report
from model.train.transformer_data import Logger, Tokenizer, evaluation_sets, load_vocab, mlm_windows, sample_rows
from model.train.transformer_phases import RESUME_FILE, pretrain, tune



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
        from model.export.onnx_weights import load_bert
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
    p.add_argument("--negatives", help="hard negatives from model/data/negatives.py (none: in-batch only)")
    p.add_argument("--out", required=True)
    p.add_argument("--leave-out", default="", help="comma-separated sources or genres left out of all training "
                                                   "(leave-one-genre-out test: 'contracts', 'eu-law')")
    p.add_argument("--sampling", choices=SAMPLINGS, default="sqrt",
                   help="how sources are weighed in contrastive epochs (legal_data.epoch_sample)")
    p.add_argument("--cap", type=int, default=20000, help="pairs per source per epoch with --sampling cap")
    p.add_argument("--init", help="checkpoint.pt to start from (its architecture wins over the flags)")
    p.add_argument("--init-onnx", help="a served folder (hybrid or transformer) whose transformer weights to start from "
                                       "(model/export/onnx_weights.py; its architecture wins over the flags)")
    p.add_argument("--question-templates", type=float, default=0.0,
                   help="contrastive: share of pairs whose query is put in a question template (model/data/questions.py)")
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
    p.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation (score with model/evaluate/dev.py after export)")
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
    p.add_argument("--hybrid-parts", help="model/train/hybrid_parts.py's .npz: the served hybrid's static and lexical parts, for --hybrid-loss")
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
    needs("model.train.transformer", (args.data, "pairs"), (args.tokenizer, "tokenizer"), (args.negatives, "negatives"), (args.init, "checkpoint"), (args.init_onnx, "folder"), (args.hybrid_parts, "hybrid-parts"))
    args.matryoshka = [int(d) for d in args.matryoshka.split(",") if d and int(d) <= args.hidden]
    if args.hidden not in args.matryoshka:
        args.matryoshka.append(args.hidden)
    args.report_dims = [int(d) for d in args.report_dims.split(",") if d]
    if args.hybrid_loss and not args.hybrid_parts:
        p.error("--hybrid-loss needs --hybrid-parts (model/train/hybrid_parts.py --out)")
    if not 0 <= args.hybrid_loss <= 1:
        p.error(f"--hybrid-loss is a share between 0 and 1, got {args.hybrid_loss}")
    return args


if __name__ == "__main__":
    main()
