"""Packs what model/gpu/v4.sh reads into one folder a GPU machine can carry (the device tool sends
at most 64 MiB with the working tree): the training pairs with every text cut to the characters
training reads (--text-tokens × 12) and held-out texts blanked (rows, order and documents kept, so
the split and model/data/negatives.py's row numbers still hold), the tokenizer, the served
transformer as an fp16 checkpoint (--init), the hybrid's fixed parts (model/train/hybrid_parts.py) and
the dev probe (model/gpu/dev_probe.py prepare).

    python3 -m model.gpu.carry --data ../shared/data/legal-pairs --model models/legal-2-embedder \
        --negatives model/work/negatives.npz --out .gpu
    # there, before training: the data as gzip files and init.pt as a plain checkpoint
    python3 -m model.gpu.carry --unpack .gpu --to /tmp/carry

To fit, the pairs travel as xz, the transformer's word table as the served int8 rows (exact) and
the other weights in fp16, and the mined negatives cut to the first --negatives-kept of each miner.
"""
import argparse
import gzip
import json
import lzma
import os
import shutil

from model.common.folder import needs
from model.common.legal_data import FILES, is_held_out


WORD = "embeddings.word_embeddings.weight"


def unpack(folder, to):
    import torch
    os.makedirs(os.path.join(to, "data"), exist_ok=True)
    for name in FILES.values():
        with lzma.open(os.path.join(folder, "data", name[:-len(".gz")] + ".xz"), "rb") as f, \
                gzip.open(os.path.join(to, "data", name), "wb", compresslevel=1) as out:
            shutil.copyfileobj(f, out)
    packed = torch.load(os.path.join(folder, "init-packed.pt"), weights_only=False)
    state = dict(packed["state_dict"])
    state[WORD] = packed["word_int8"].float() * packed["word_scale"]
    torch.save({"config": packed["config"], "state_dict": state}, os.path.join(to, "init.pt"))
    print(f"unpacked {folder} into {to}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data")
    p.add_argument("--model", help="the served hybrid folder")
    p.add_argument("--negatives")
    p.add_argument("--negatives-kept", type=int, default=4)
    p.add_argument("--out")
    p.add_argument("--chars", type=int, default=2048, help="characters of each text kept (256 tokens of legal text are ~1,200)")
    p.add_argument("--unpack", help="a packed folder to unpack (on the GPU machine)")
    p.add_argument("--to", help="where --unpack writes data/ and init.pt")
    args = p.parse_args()
    needs("model.gpu.carry", (args.data, "pairs"), (args.model, "hybrid"), (args.negatives, "negatives"))
    if args.unpack:
        return unpack(args.unpack, args.to)
    if not (args.data and args.model and args.negatives and args.out):
        p.error("--data, --model, --negatives and --out are needed to pack")
    import torch
    from model.gpu.dev_probe import prepare
    from model.export.static import quantize_rows
    from model.train.hybrid_parts import export
    from model.export.onnx_weights import load_bert
    os.makedirs(os.path.join(args.out, "data"), exist_ok=True)
    for subset, name in FILES.items():
        with gzip.open(os.path.join(args.data, name), "rt", encoding="utf-8") as f, \
                lzma.open(os.path.join(args.out, "data", name[:-len(".gz")] + ".xz"), "wt", encoding="utf-8", preset=9) as out:
            for line in f:
                row = json.loads(line)
                text = "" if is_held_out(subset, row["doc"]) else row["text"][:args.chars]
                out.write(json.dumps({"query": row["query"], "text": text, "doc": row["doc"]}, ensure_ascii=False) + "\n")
    shutil.copy(os.path.join(args.model, "tokenizer.json"), os.path.join(args.out, "tokenizer.json"))
    import numpy as np
    with np.load(args.negatives) as mined:
        np.savez_compressed(os.path.join(args.out, "negatives.npz"), rows=mined["rows"],
                            **{k: mined[k][:, :args.negatives_kept] for k in ("bm25", "model")})
    model = load_bert(args.model)
    state = model.state_dict()
    word_int8, word_scale = quantize_rows(state.pop(WORD).numpy())  # the served table's own rows (exact)
    torch.save({"config": model.config, "state_dict": {k: v.half() for k, v in state.items()},
                "word_int8": torch.from_numpy(word_int8), "word_scale": torch.from_numpy(word_scale)}, os.path.join(args.out, "init-packed.pt"))
    export(args.model, os.path.join(args.out, "parts.npz"))
    prepare(args.model, os.path.join(args.out, "dev.npz"))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    print(f"{args.out}: {total / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
