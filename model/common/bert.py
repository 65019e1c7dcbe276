"""A small BERT encoder in plain PyTorch, with the parameter names of `transformers`' BertModel
(so its state dict loads into one unchanged), used by the transformer recipe and its export.

Training runs attention through `scaled_dot_product_attention`; export (`export_mode = True`)
spells the same arithmetic out in MatMul/Softmax so the ONNX graph needs opset 14 only.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

PAD = 0  # [PAD]'s id in the vocabulary every folder shares


class Embeddings(nn.Module):
    def __init__(self, vocab_size, hidden, max_positions, dropout):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.heads = heads


class DenseNorm(nn.Module):
    def __init__(self, inner, hidden, dropout):
        super().__init__()
        self.dense = nn.Linear(inner, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        setattr(self, "self", SelfAttention(hidden, heads))
        self.output = DenseNorm(hidden, hidden, dropout)


class Intermediate(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.dense = nn.Linear(hidden, inner)


class Layer(nn.Module):
    def __init__(self, hidden, heads, inner, dropout):
        super().__init__()
        self.attention = Attention(hidden, heads, dropout)
        self.intermediate = Intermediate(hidden, inner)
        self.output = DenseNorm(inner, hidden, dropout)
        self.dropout_p = dropout
        self.export_mode = False

    def forward(self, x, keep, additive_mask):
        b, s, h = x.shape
        sa = getattr(self.attention, "self")
        n = sa.heads
        q = sa.query(x).view(b, s, n, h // n).transpose(1, 2)
        k = sa.key(x).view(b, s, n, h // n).transpose(1, 2)
        v = sa.value(x).view(b, s, n, h // n).transpose(1, 2)
        if self.export_mode or not hasattr(F, "scaled_dot_product_attention"):  # torch < 2.0
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // n) + additive_mask
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        else:
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                                 dropout_p=self.dropout_p if self.training else 0.0)
        ctx = ctx.transpose(1, 2).reshape(b, s, h)
        x = self.attention.output(ctx, x)
        return self.output(F.gelu(self.intermediate.dense(x)), x)


class Encoder(nn.Module):
    def __init__(self, hidden, heads, inner, layers, dropout):
        super().__init__()
        self.layer = nn.ModuleList(Layer(hidden, heads, inner, dropout) for _ in range(layers))


class Bert(nn.Module):
    """forward(input_ids, attention_mask, token_type_ids) -> last_hidden_state (batch, seq, hidden)."""

    def __init__(self, vocab_size, hidden=256, layers=4, heads=4, inner=1024, max_positions=512, dropout=0.1):
        super().__init__()
        self.config = dict(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                           num_attention_heads=heads, intermediate_size=inner,
                           max_position_embeddings=max_positions, hidden_dropout_prob=dropout)
        self.embeddings = Embeddings(vocab_size, hidden, max_positions, dropout)
        self.encoder = Encoder(hidden, heads, inner, layers, dropout)
        self.apply(_init_weights)

    def set_export_mode(self, on):
        for layer in self.encoder.layer:
            layer.export_mode = on

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        keep = attention_mask[:, None, None, :].bool()
        additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.encoder.layer:
            x = layer(x, keep, additive)
        return x


class MlmHead(nn.Module):
    """BERT's prediction head with the decoder tied to the word embeddings."""

    def __init__(self, bert):
        super().__init__()
        hidden = bert.config["hidden_size"]
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(bert.config["vocab_size"]))
        self.word_embeddings = bert.embeddings.word_embeddings

    def forward(self, hidden_states):
        x = self.LayerNorm(F.gelu(self.dense(hidden_states)))
        return x @ self.word_embeddings.weight.T + self.bias


def pad_table(seqs):
    """Id sequences as one int32 table padded with 0 ([PAD]), and their lengths."""
    width = max(len(s) for s in seqs)
    table = torch.zeros((len(seqs), width), dtype=torch.int32)
    for i, s in enumerate(seqs):
        table[i, :len(s)] = torch.tensor(s, dtype=torch.int32)
    return table, torch.tensor([len(s) for s in seqs])


def mean_pool(hidden, attention_mask):
    """lexembed's pooling: the mean over tokens the mask keeps ([CLS] and [SEP] included)."""
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


def _init_weights(module):
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.Embedding) and module.padding_idx is not None:
        with torch.no_grad():
            module.weight[module.padding_idx].zero_()


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
