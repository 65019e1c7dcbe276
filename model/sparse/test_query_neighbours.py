"""Tests of the query neighbours' table (model/sparse/query_neighbours.py; numpy, no data, no onnx).

    python3 -m unittest discover -s model -p 'test_*.py'
"""
import unittest

import numpy as np

from model.sparse.query_neighbours import neighbour_table


class NeighbourTable(unittest.TestCase):
    def setUp(self):
        # pieces: 0 special, 1..6 words; 2 and 3 point the same way, 4 close to them, 5 a continuation, 6 rare
        self.rows = np.array([[1, 0, 0], [0, 0, 1], [1, 1, 0], [2, 2, 0], [1, 0.8, 0.2], [1, 1, 0], [1, 1, 0.01]], dtype=np.float32)
        self.idf = np.array([0, 2, 3, 3, 4, 3, 12.0])
        self.continuation = np.array([False, False, False, False, False, True, False])

    def table(self, **kw):
        args = {"canonical": None, "neighbours": 2, "threshold": 0.5, "max_idf": 9.0, **kw}
        return neighbour_table(self.rows, self.idf, args["canonical"], self.continuation, args["neighbours"], args["threshold"], args["max_idf"])

    def test_nearest_first_never_itself_specials_continuations_or_rare_words(self):
        sources, targets, sims = self.table()
        table = {}
        for s, t, x in zip(sources.tolist(), targets.tolist(), sims.tolist()):
            table.setdefault(s, []).append((t, round(x, 3)))
        self.assertEqual(sorted(table), [2, 3, 4, 6])  # 1 has nothing within 0.5; 6 proposes, is never proposed
        self.assertEqual([t for t, _ in table[2]], [3, 4])
        self.assertEqual(table[2][0][1], 1.0)
        for s, ts in table.items():
            self.assertNotIn(s, [t for t, _ in ts])
            self.assertTrue(all(t not in (0, 5, 6) for t, _ in ts))
            self.assertEqual([x for _, x in ts], sorted([x for _, x in ts], reverse=True))
        self.assertTrue(np.all(np.diff(sources) >= 0))
        self.assertTrue(np.all(sims >= 0.5))
        self.assertEqual((sources.dtype, targets.dtype, sims.dtype), (np.int32, np.int32, np.float32))

    def test_threshold_count_and_classes(self):
        self.assertEqual(len(self.table(threshold=0.999)[0]), 4)  # 2<->3 and 6->2, 6->3
        self.assertLessEqual(np.bincount(self.table(neighbours=1)[0]).max(), 1)
        # with 3 in 2's stem class, only the class's smallest piece takes part
        sources, targets, _ = self.table(canonical=np.array([0, 1, 2, 2, 4, 5, 6]))
        self.assertNotIn(3, sources.tolist() + targets.tolist())
        self.assertIn(6, self.table(max_idf=20.0)[1].tolist())


if __name__ == "__main__":
    unittest.main()
