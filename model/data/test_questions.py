"""Tests of the question-shaped training queries (stdlib only; the shipped tokenizer, no data):

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import random
import unittest

from model.data.questions import CROP_TEMPLATES, DEFINITION_TEMPLATES, HEADING_TEMPLATES, QueryMaker
from model.common.test_legal_data import load_wordpiece

TOK = load_wordpiece("models/legal-2-embedder")
HEADING = TOK.encode("Notice of termination")
TEXT = TOK.encode("The tenant may terminate this lease by giving the landlord ninety days written notice "
                  "before the end of any year of the term, and the deposit shall then be returned in full.")


def words(ids):
    return [TOK.vocab[i] for i in ids]


class QueryMakerTest(unittest.TestCase):
    def test_a_templated_heading_is_a_question_around_the_heading_with_cls_and_sep(self):
        maker = QueryMaker(TOK, random.Random(1))
        for _ in range(50):
            q = maker.templated("canada-sections", HEADING)
            self.assertEqual((q[0], q[-1]), (TOK.cls, TOK.sep))
            body = words(q)
            self.assertIn("termination", body)
            self.assertLess(len(HEADING), len(q))
            # The heading's pieces appear in order, as one run, inside the frame.
            inner = HEADING[1:-1]
            self.assertTrue(any(q[k:k + len(inner)] == inner for k in range(len(q))))

    def test_definitions_get_definition_questions(self):
        maker = QueryMaker(TOK, random.Random(2))
        starts = {tuple(TOK.encode(t.split("{}")[0])[1:-1]) for t in DEFINITION_TEMPLATES}
        for _ in range(30):
            q = maker.templated("legal-dictionary", TOK.encode("Estoppel"))
            self.assertTrue(any(tuple(q[1:1 + len(s)]) == s for s in starts), words(q))

    def test_a_crop_is_a_short_span_of_the_text_with_few_pieces_dropped(self):
        maker = QueryMaker(TOK, random.Random(3), crop_tokens=(6, 12), drop=0.15)
        frame_ids = {i for t in CROP_TEMPLATES + HEADING_TEMPLATES for i in TOK.encode(t.replace("{}", ""))}
        text_ids = set(TEXT)
        for _ in range(100):
            q = maker.cropped(TEXT)
            self.assertEqual((q[0], q[-1]), (TOK.cls, TOK.sep))
            own = [i for i in q[1:-1] if i in text_ids and i not in frame_ids]
            self.assertGreaterEqual(len(own), 1)
            self.assertLessEqual(len(q), 12 + 2 + 8)  # the span, [CLS]/[SEP] and the longest frame

    def test_make_mixes_in_the_shares_asked_for_and_is_reproducible(self):
        def kinds(seed):
            maker = QueryMaker(TOK, random.Random(seed))
            out = []
            for _ in range(2000):
                q = maker.make("dc-code", HEADING, TEXT, 0.25, 0.25)
                out.append("as-is" if q == HEADING else "question")
            return out
        first = kinds(7)
        self.assertEqual(first, kinds(7))
        share = first.count("as-is") / len(first)
        self.assertAlmostEqual(share, 0.5, delta=0.05)
        maker = QueryMaker(TOK, random.Random(7))
        self.assertTrue(all(maker.make("dc-code", HEADING, TEXT, 0.0, 0.0) == HEADING for _ in range(100)))

    def test_queries_stay_within_max_tokens(self):
        maker = QueryMaker(TOK, random.Random(4), crop_tokens=(60, 80), max_tokens=32)
        long_heading = TOK.encode(" ".join(["indemnification"] * 60))
        for _ in range(50):
            self.assertLessEqual(len(maker.templated("dc-code", long_heading)), 32)
            self.assertLessEqual(len(maker.cropped(TEXT * 3)), 32)


if __name__ == "__main__":
    unittest.main()
