"""Question-shaped training queries made from the training pairs alone (issue 33, item 2).

The training queries are headings, titles and defined terms; users ask questions. Two kinds of
query are made here, at the token-id level so they cost nothing per step:

- **templated**: the pair's own query inside a question a practitioner would ask ("What are the
  requirements for {heading}?", "What does {term} mean?"); the model learns that the question
  words carry no topic.
- **cropped**: a random span of the pair's own text, optionally inside a question frame, with a
  few of its pieces dropped: the wording overlap (and partial paraphrase) of a question written
  from a passage.

Both are drawn afresh each time a pair is used (`QueryMaker.make`).
"""
import random

HEADING_TEMPLATES = (
    "what are the rules on {}?", "what does the law say about {}?", "what is required regarding {}?",
    "how is {} regulated?", "when does {} apply?", "can you explain the provisions on {}?",
    "what obligations apply to {}?", "is there a requirement concerning {}?", "what happens in the case of {}?",
    "under what conditions does {} apply?", "what must a person do about {}?", "who is responsible for {}?",
    "what are the requirements for {}?", "are there exceptions for {}?", "what is the procedure for {}?",
    "how does the agreement deal with {}?", "what guidance is there on {}?", "what should i know about {}?",
    "does the law say anything about {}?", "which provision covers {}?",
)
DEFINITION_TEMPLATES = (
    "what does {} mean?", "what is {}?", "what is the meaning of {} in law?", "define {}.",
    "what is meant by {}?", "what is a {}?", "how is {} defined?",
)
CROP_TEMPLATES = (
    "{}?", "{}", "does the rule require that {}?", "is it true that {}?", "what applies when {}?",
    "can {}?", "how is it determined whether {}?", "what must be done if {}?", "under what circumstances {}?",
    "what does it mean that {}?",
)
# Sources whose queries are defined terms rather than headings.
DEFINITION_SOURCES = frozenset({"legal-dictionary"})


class QueryMaker:
    """Makes question-shaped query ids from a pair's (query ids, text ids), both with [CLS]/[SEP].

    tokenizer: legal_data.WordPiece; rng: a random.Random.
    """

    def __init__(self, tokenizer, rng, crop_tokens=(6, 32), drop=0.15, max_tokens=64):
        self.rng = rng
        self.crop_tokens = crop_tokens
        self.drop = drop
        self.max_tokens = max_tokens
        self.cls, self.sep = tokenizer.encode("")[:1], tokenizer.encode("")[-1:]

        def frames(templates):
            out = []
            for t in templates:
                before, after = t.split("{}")
                out.append((tokenizer.encode(before)[1:-1] if before.strip() else [],
                            tokenizer.encode(after)[1:-1] if after.strip() else []))
            return out
        self.heading_frames = frames(HEADING_TEMPLATES)
        self.definition_frames = frames(DEFINITION_TEMPLATES)
        self.crop_frames = frames(CROP_TEMPLATES)

    def templated(self, source, query_ids):
        frames = self.definition_frames if source in DEFINITION_SOURCES else self.heading_frames
        before, after = self.rng.choice(frames)
        return self._wrap(before, query_ids[1:-1], after)

    def cropped(self, text_ids):
        body = text_ids[1:-1]
        lo, hi = self.crop_tokens
        n = min(len(body), self.rng.randint(lo, hi))
        start = self.rng.randint(0, max(0, len(body) - n))
        span = [t for t in body[start:start + n] if self.rng.random() >= self.drop] or body[start:start + n]
        before, after = self.rng.choice(self.crop_frames)
        return self._wrap(before, span, after)

    def make(self, source, query_ids, text_ids, p_template, p_crop):
        """The query ids to train on this time: templated with p_template, cropped with p_crop, else as is."""
        r = self.rng.random()
        if r < p_template:
            return self.templated(source, query_ids)
        if r < p_template + p_crop and len(text_ids) > 4:
            return self.cropped(text_ids)
        return query_ids

    def _wrap(self, before, body, after):
        room = self.max_tokens - 2 - len(before) - len(after)
        return self.cls + list(before) + list(body[:max(1, room)]) + list(after) + self.sep
