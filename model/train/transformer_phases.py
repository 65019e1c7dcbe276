"""The transformer trainer's two phases (model/train/transformer.py): masked-language
pretraining and contrastive tuning (InfoNCE on every Matryoshka prefix, mined negatives,
question-shaped queries, optionally the served hybrid's score), with the shared learning-rate
schedule, resumable stops and half-precision snapshots."""
import collections
import os
import random
import time

import torch
from torch.nn import functional as F

from model.common.bert import MlmHead, mean_pool, pad_table
from model.common.legal_data import epoch_counts, epoch_sample
from model.data.questions import QueryMaker
from model.train.transformer_data import CLS, MASK, PAD, SEP, load_negatives, query_prefix

RESUME_FILE = "resume.pt"


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
        from model.train.hybrid_parts import FixedParts
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


def autocast(device, cpu_bf16=False):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_bf16)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()
