"""Tests of the data split and the Python WordPiece (stdlib only; no data files needed):

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import json
import os
import unittest

import random

from model.common.folder import ROOT
from model.common.legal_data import CHARS_PER_TOKEN_CUT, FILES, GENRES, WordPiece, encode_capped, epoch_sample, is_held_out, sources_of, split_group


def load_wordpiece(folder):
    with open(os.path.join(ROOT, folder, "tokenizer.json"), encoding="utf-8") as f:
        ids = json.load(f)["model"]["vocab"]
    vocab = [None] * len(ids)
    for piece, i in ids.items():
        vocab[i] = piece
    return WordPiece(vocab)


class SplitTest(unittest.TestCase):
    def test_the_split_is_a_fixed_function_of_the_document(self):
        docs = [f"act-{i}" for i in range(5000)]
        first = [is_held_out("canada-sections", d) for d in docs]
        self.assertEqual(first, [is_held_out("canada-sections", d) for d in docs])
        # Pinned: the shipped models' held-out figures depend on exactly this split.
        self.assertEqual([d for d, held in zip(docs, first) if held][:3], ["act-5", "act-11", "act-25"])
        self.assertEqual(sum(first), 518)
        # About a tenth is held out (10 % of a hash), not all or none.
        self.assertTrue(0.08 < sum(first) / len(first) < 0.12, sum(first) / len(first))

    def test_dc_code_is_held_out_by_title_so_sections_of_one_title_never_straddle(self):
        self.assertEqual(split_group("dc-code", "dc-code/42/3301"), "dc-code/42")
        for title in range(60):
            sections = {is_held_out("dc-code", f"dc-code/{title}/{s}") for s in range(25)}
            self.assertEqual(len(sections), 1, f"title {title} split across train and held-out")

    def test_other_sources_are_held_out_by_document(self):
        self.assertEqual(split_group("cfpb", "12-cfr-1002"), "12-cfr-1002")
        self.assertEqual(split_group("contracts-lexpredict", "lexpredict/employment/12"), "lexpredict/employment/12")


class SourcesTest(unittest.TestCase):
    def test_every_file_has_a_genre_and_genres_name_their_sources(self):
        self.assertEqual(set(GENRES), set(FILES))
        self.assertEqual(sources_of("contracts"), ["contracts-lexpredict", "contracts-commonaccord",
                                                   "contracts-commonpaper", "contracts-nli"])
        self.assertEqual(sources_of("eu-law, cfpb"), ["eurlex", "cfpb"])
        self.assertEqual(sources_of(""), [])

    def test_an_unknown_name_stops_with_the_valid_ones(self):
        with self.assertRaises(SystemExit) as e:
            sources_of("contract")
        self.assertIn("contracts-lexpredict", str(e.exception))
        self.assertIn("eu-law", str(e.exception))


class SamplingTest(unittest.TestCase):
    by_source = {"big": list(range(0, 1000)), "mid": list(range(1000, 1100)), "tiny": [1100, 1101]}

    def counts(self, sampling, cap=150):
        drawn = epoch_sample(self.by_source, sampling, cap, random.Random(1))
        return {s: sum(1 for i in drawn if i in set(m)) for s, m in self.by_source.items()}, drawn

    def test_proportional_takes_every_pair_once(self):
        counts, drawn = self.counts("proportional")
        self.assertEqual(counts, {"big": 1000, "mid": 100, "tiny": 2})
        self.assertEqual(len(set(drawn)), len(drawn))

    def test_cap_keeps_at_most_cap_distinct_pairs_of_each_source(self):
        counts, drawn = self.counts("cap")
        self.assertEqual(counts, {"big": 150, "mid": 100, "tiny": 2})
        self.assertEqual(len(set(drawn)), len(drawn))

    def test_uniform_and_sqrt_draw_as_many_pairs_with_repeats_spread_evenly(self):
        counts, drawn = self.counts("uniform")
        self.assertEqual(counts, {"big": 367, "mid": 367, "tiny": 367})
        self.assertEqual(sorted(drawn.count(i) for i in (1100, 1101)), [183, 184])
        counts, _ = self.counts("sqrt")
        self.assertEqual(sum(counts.values()), 1102)
        self.assertAlmostEqual(counts["big"] / counts["tiny"], (1000 / 2) ** 0.5, delta=0.5)


class WordPieceTest(unittest.TestCase):
    def test_matches_the_ids_transformers_js_gives_for_the_bundled_tokenizer(self):
        # tests/fixtures/legal-model-parity.json holds texts and their ids from the served model.
        with open(os.path.join(ROOT, "tests", "fixtures", "legal-model-parity.json"), encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        tok = load_wordpiece("models/legal-2-embedder")
        self.assertGreater(len(cases), 3)
        for case in cases:
            self.assertEqual(encode_capped(tok, case["text"], 512), case["ids"], case["text"][:60])

    def test_the_character_cut_never_changes_what_max_tokens_keeps(self):
        tok = load_wordpiece("models/legal-2-embedder-static")
        # Long single-piece words: more than CHARS_PER_TOKEN_CUT characters per token (the cut
        # used to end such texts early), and a cut that would fall inside a word.
        for word in ["indemnification", "notwithstanding", "a", "subparagraph(iv)"]:
            text = " ".join([word] * 400)
            self.assertGreater(len(text), 64 * CHARS_PER_TOKEN_CUT)
            self.assertEqual(encode_capped(tok, text, 64), tok.encode(text, 64), word)
            self.assertEqual(len(encode_capped(tok, text, 64)), 64)

    def test_an_added_piece_is_kept_whole_and_the_rest_tokenised_as_before(self):
        # A learned query prefix ([unused0], model/train/transformer.py --query-prefix) served as the
        # retrieval/query prompt: tokenizer.json lists it as an added token, kept whole as
        # transformers.js keeps it; without that entry it is ordinary text.
        plain = load_wordpiece("models/legal-2-embedder")
        tok = WordPiece(plain.vocab, added=["[unused0]"])
        text = "What notice must a landlord give?"
        body = plain.encode(text)
        self.assertEqual(tok.encode("[unused0] " + text), body[:1] + [tok.ids["[unused0]"]] + body[1:])
        self.assertEqual(tok.encode(text), body)
        self.assertNotIn(tok.ids["[unused0]"], plain.encode("[unused0] " + text))
        capped = tok.encode("[unused0] " + text, 4)
        self.assertEqual(len(capped), 4)
        self.assertEqual(capped[-1], tok.sep)
        self.assertEqual(capped[:3], body[:1] + [tok.ids["[unused0]"]] + body[1:2])


if __name__ == "__main__":
    unittest.main()
