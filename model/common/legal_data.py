"""Data loading, the document-level hold-out split and a Python WordPiece tokenizer that
matches the tokenizer.json lexembed ships (BertNormalizer + BertPreTokenizer + WordPiece)."""
import gzip
import hashlib
import json
import math
import os
import re
import unicodedata

FILES = {
    "canada-sections": "canada-sections.jsonl.gz",
    "canada-long-titles": "canada-long-titles.jsonl.gz",
    "dc-code": "dc-code.jsonl.gz",
    "cfpb": "cfpb.jsonl.gz",
    "contracts-lexpredict": "contracts-lexpredict.jsonl.gz",
    "contracts-commonaccord": "contracts-commonaccord.jsonl.gz",
    "contracts-commonpaper": "contracts-commonpaper.jsonl.gz",
    "contracts-nli": "contracts-nli.jsonl.gz",
    "eurlex": "eurlex.jsonl.gz",
    "legal-dictionary": "legal-dictionary.jsonl.gz",
    "licenses": "licenses.jsonl.gz",
}

# Each source's genre, for reports by genre and for leave-one-genre-out runs.
GENRES = {
    "canada-sections": "legislation", "canada-long-titles": "legislation", "dc-code": "legislation",
    "cfpb": "legislation", "contracts-lexpredict": "contracts", "contracts-commonaccord": "contracts",
    "contracts-commonpaper": "contracts", "contracts-nli": "contracts", "eurlex": "eu-law",
    "legal-dictionary": "definitions", "licenses": "licences",
}


def sources_of(names):
    """Sources named, comma-separated, directly or by genre ("contracts" → the four contract files)."""
    out = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        found = [s for s in FILES if s == name or GENRES[s] == name]
        if not found:
            raise SystemExit(f"unknown source or genre {name!r}: sources {sorted(FILES)}, genres {sorted(set(GENRES.values()))}")
        out.extend(s for s in found if s not in out)
    return out


# Long texts are first cut to this many characters per allowed token, at a space, before
# tokenising: it keeps the tokenizer off megabyte-long texts that truncation drops anyway.
CHARS_PER_TOKEN_CUT = 12


def encode_capped(tokenizer, text, max_tokens):
    """WordPiece ids of text (with [CLS]/[SEP]), at most max_tokens: exactly what lexembed serves
    (it tokenises the whole text). The cut falls at a space, so no kept word is split, and when
    the cut text gives fewer than max_tokens ids (very long words), the cut grows."""
    cut = max_tokens * CHARS_PER_TOKEN_CUT
    while cut < len(text):
        space = text.rfind(" ", 0, cut)
        if space > 0:
            ids = tokenizer.encode(text[:space], max_tokens)
            if len(ids) >= max_tokens:
                return ids
        cut *= 4
    return tokenizer.encode(text, max_tokens)


def data_fingerprint(data_dir):
    """SHA-256 of each data file, recorded in training.json so a run names the exact data."""
    out = {}
    for name in sorted(FILES.values()):
        h = hashlib.sha256()
        with open(os.path.join(data_dir, name), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        out[name] = h.hexdigest()
    return out


def split_group(subset, doc):
    """The unit held out together: a Canadian act/regulation, a DC Code title, a CFR part."""
    if subset == "dc-code":
        return "/".join(doc.split("/")[:2])  # dc-code/<title>
    return doc


def is_held_out(subset, doc, percent=10):
    group = split_group(subset, doc)
    # DC has only 50 titles: hold out by title so whole documents stay out of training.
    h = int(hashlib.sha1(("lexembed-eval:" + group).encode("utf-8")).hexdigest()[:8], 16)
    return h % 100 < percent


def load_pairs(data_dir, sources=None):
    """Yields (subset, query, text, doc) in file order (only `sources`, when given)."""
    for subset, name in FILES.items():
        if sources is not None and subset not in sources:
            continue
        with gzip.open(os.path.join(data_dir, name), "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                yield subset, row["query"], row["text"], row["doc"]


SAMPLINGS = ("proportional", "cap", "uniform", "sqrt")


def draw(members, k, rng):
    """k indices from members: whole shuffled passes, then a partial one (repeats spread evenly)."""
    out = []
    while len(out) < k:
        members = members[:]
        rng.shuffle(members)
        out.extend(members[:k - len(out)])
    return out


def epoch_counts(sizes, sampling, cap):
    """Pairs drawn from each source in one epoch: proportional (every pair once), cap (at most
    `cap` pairs of each source), uniform (the same number from each source) or sqrt (in proportion
    to the square root of a source's size); the last two draw as many pairs as there are.
    sizes: source → number of its training pairs."""
    if sampling == "proportional":
        return dict(sizes)
    if sampling == "cap":
        return {s: min(n, cap) for s, n in sizes.items()}
    total = sum(sizes.values())
    weight = {s: (1.0 if sampling == "uniform" else math.sqrt(n)) for s, n in sizes.items()}
    return {s: round(total * w / sum(weight.values())) for s, w in weight.items()}


def epoch_sample(by_source, sampling, cap, rng):
    """One epoch's training indices, each source's share as epoch_counts says.
    by_source: source → indices of its training pairs; rng: a random.Random (or the module)."""
    counts = epoch_counts({s: len(m) for s, m in by_source.items()}, sampling, cap)
    return [i for s, members in by_source.items() for i in draw(members, counts[s], rng)]


def split_pairs(data_dir, sources=None):
    train, held_out = [], []
    for subset, query, text, doc in load_pairs(data_dir, sources):
        (held_out if is_held_out(subset, doc) else train).append((subset, query, text, doc))
    return train, held_out


_PUNCT_RE = None


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def normalize(text):
    """BertNormalizer(clean_text, handle_chinese_chars, lowercase, strip_accents=None→follow lowercase)."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r"):
            continue
        if ch in "\t\n\r" or unicodedata.category(ch) == "Zs":
            out.append(" ")
        elif (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
              0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F):
            out.append(" " + ch + " ")
        else:
            out.append(ch)
    text = "".join(out).lower()
    text = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Mn")


def pre_tokenize(text):
    """BertPreTokenizer: split on whitespace, and each punctuation character is its own word."""
    words = []
    for chunk in text.split():
        cur = []
        for ch in chunk:
            if _is_punctuation(ch):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(ch)
            else:
                cur.append(ch)
        if cur:
            words.append("".join(cur))
    return words


# BERT's own special pieces; "[unusedN]" pieces are free for learned prompts (a query prefix).
SPECIAL_PIECES = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
UNUSED_PIECE = re.compile(r"\[unused\d+\]")


class WordPiece:
    def __init__(self, vocab, max_chars=100, added=()):
        """`added`: pieces kept whole wherever they occur in a text (tokenizer.json's added tokens
        beyond [PAD]/[UNK]/[CLS]/[SEP]/[MASK], e.g. a learned query prefix such as [unused0])."""
        self.vocab = vocab
        self.ids = {p: i for i, p in enumerate(vocab)}
        self.added = re.compile("(" + "|".join(re.escape(a) for a in added) + ")") if added else None
        self.unk = self.ids["[UNK]"]
        self.cls = self.ids["[CLS]"]
        self.sep = self.ids["[SEP]"]
        self.max_chars = max_chars
        self.cache = {}

    def word_ids(self, word):
        hit = self.cache.get(word)
        if hit is not None:
            return hit
        if len(word) > self.max_chars:
            ids = [self.unk]
        else:
            ids, start = [], 0
            while start < len(word):
                end, found = len(word), None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.ids:
                        found = self.ids[piece]
                        break
                    end -= 1
                if found is None:
                    ids = [self.unk]
                    break
                ids.append(found)
                start = end
        if len(self.cache) < 2_000_000:
            self.cache[word] = ids
        return ids

    def encode(self, text, max_tokens=None):
        """Ids with [CLS] … [SEP]; truncation keeps the final [SEP] (as lexembed's drop_end does)."""
        ids = [self.cls]
        limit = None if max_tokens is None else max_tokens - 1
        for k, part in enumerate(self.added.split(text) if self.added else [text]):
            words = [part] if k % 2 else pre_tokenize(normalize(part))
            for word in words:
                ids.extend([self.ids[word]] if k % 2 else self.word_ids(word))
                if limit is not None and len(ids) >= limit:
                    ids = ids[:limit]
                    ids.append(self.sep)
                    return ids
        ids.append(self.sep)
        return ids
