"""Tests of the lexical part and document form as ONNX graphs (model/graph/lexical_graph.py,
model/graph/document_form.py) against the rules they write (model/rules/): a stand-in dense graph, run where
onnx and onnxruntime are installed; and the lexical step's own checks of its inputs (numpy).

    npm run test:model
"""
import importlib.util
import os
import tempfile
import unittest

import numpy as np

from model.graph.lexical import parse_weights, read_term_weights
from model.rules.bm25 import B, K1, Shares, balanced_buckets, lexical_part, signed_weights
from model.rules.document_form import served_form, spread
from model.sparse.stem_classes import stem_classes
from model.sparse.test_stem_classes import STEM, VOCAB

HAVE_RUNTIME = importlib.util.find_spec("onnx") and importlib.util.find_spec("onnxruntime")


def stand_in_model(table):
    """A stand-in dense graph for add_lexical.add_to_graph: each token's row of `table`, as the
    hybrid's per-token unit parts (also model/sparse/test_stem_classes.py's)."""
    import onnx
    from onnx import TensorProto, helper
    from model.rules.tables import OUTPUT
    graph = helper.make_graph(
        [helper.make_node("Gather", ["dense.table", "input_ids"], [OUTPUT])], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "l"]) for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["b", "l", table.shape[1]])],
        [onnx.numpy_helper.from_array(table, "dense.table")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


@unittest.skipUnless(HAVE_RUNTIME, "needs onnx and onnxruntime")
class DocumentFormGraph(unittest.TestCase):
    """The graph's nodes on a small folder-less stand-in: a lexical part and rotation built by
    add_lexical.add_to_graph over an identity 'dense' graph, then add_document_form."""

    def test_marker_selects_the_form_and_cls_goes_back(self):
        import onnx
        import onnxruntime as ort
        from model.graph.lexical_graph import add_to_graph
        from model.rules.tables import OUTPUT
        from model.graph.document_form import add_document_form
        vocab, width_dense, buckets = 120, 8, 64 + 8  # the spread needs ≥ 64 components; every bucket gets a piece
        rng = np.random.default_rng(2)
        idf = rng.uniform(0.5, 5.0, vocab)
        idf[[0, 1, 2, 3]] = 0.0  # 0 pad, 1 [CLS], 2 marker, 3 [SEP]
        table = rng.normal(size=(vocab, width_dense)).astype(np.float32)
        model = stand_in_model(table)
        bucket, weight = balanced_buckets(idf, buckets), signed_weights(idf, 0)
        parts = np.zeros((3, width_dense + buckets))
        parts[1, :width_dense] = 1.0
        parts[2, width_dense:] = 1.0
        add_to_graph(model, bucket, weight, 4.0, parts, Shares((0, 0.4, 0.6)), normalise_dense=True)
        add_document_form(model, marker=2, cls=1, c=10.0, g_max=2.0, max_lexical_share=0.6)
        onnx.checker.check_model(model)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        run = lambda ids: session.run([OUTPUT], {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)})[0][0, 0]
        query, document = run([1, 5, 6, 6, 9, 3]), run([2, 5, 6, 6, 9, 3])
        self.assertAlmostEqual(float(np.linalg.norm(document)), 1.0, places=5)
        # the dense part read [CLS] in the marker's place: its components are the query's, ÷ Mx
        dense = table[[1, 5, 6, 6, 9, 3]].sum(0)
        dense /= np.linalg.norm(dense)
        m_x = np.sqrt(1 + 0.6 * (2.0 ** 2 - 1))
        np.testing.assert_allclose(query[:width_dense] / np.linalg.norm(query), np.sqrt(0.4) * dense, atol=1e-5)
        np.testing.assert_allclose(document[:width_dense], np.sqrt(0.4) * dense / m_x, atol=1e-5)
        # the slack (the last component before the spread, which is its own inverse): 0 for a query
        self.assertAlmostEqual(float(spread(query[None])[0, -1]), 0.0, places=6)
        self.assertGreater(float(spread(document[None])[0, -1]), 0.0)
        self.assertFalse(np.allclose(query, document))
        # the marker anywhere but position 0 is an ordinary piece: the query form, the dense part reading its row
        later = run([1, 2, 5, 3])
        self.assertAlmostEqual(float(spread(later[None])[0, -1]), 0.0, places=6)
        dense_later = table[[1, 2, 5, 3]].sum(0)
        np.testing.assert_allclose(later[:width_dense] / np.linalg.norm(later), np.sqrt(0.4) * dense_later / np.linalg.norm(dense_later), atol=1e-5)


@unittest.skipUnless(HAVE_RUNTIME, "needs onnx and onnxruntime")
class StemClassesGraph(unittest.TestCase):
    def test_the_graph_counts_classes_as_the_recipe_does_in_both_forms(self):
        import onnx
        import onnxruntime as ort
        from model.graph.lexical_graph import add_to_graph
        from model.rules.tables import OUTPUT
        from model.graph.document_form import add_document_form
        vocab, width_dense, buckets = 120, 8, 64 + 8
        rng = np.random.default_rng(5)
        canonical = np.arange(vocab)
        canonical[[11, 12]] = 10  # one class of three pieces
        canonical[[21]] = 20
        idf = rng.uniform(0.5, 5.0, vocab)
        idf[[0, 1, 2, 3]] = 0.0  # 0 pad, 1 [CLS], 2 marker, 3 [SEP]
        idf = idf[canonical]
        table = rng.normal(size=(vocab, width_dense)).astype(np.float32)
        model = stand_in_model(table)
        bucket, weight = balanced_buckets(idf, buckets, canonical), signed_weights(idf, 0, None, canonical)
        parts = np.zeros((3, width_dense + buckets))
        parts[1, :width_dense] = 1.0
        parts[2, width_dense:] = 1.0
        shares = Shares((0, 0.4, 0.6))
        add_to_graph(model, bucket, weight, 4.0, parts, shares, normalise_dense=True, canonical=canonical)
        add_document_form(model, marker=2, cls=1, c=3.0, g_max=2.0, max_lexical_share=0.6)
        onnx.checker.check_model(model)
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        run = lambda ids: session.run([OUTPUT], {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)})[0][0, 0]
        ids = [1, 10, 11, 12, 20, 21, 30, 3]
        record = {"document_form": {"c": 3.0, "g_max": 2.0, "m_x": float(np.sqrt(1 + 0.6 * 3))}, "shares": shares.record()}
        dense = table[ids].sum(0)
        dense = np.sqrt(0.4) * dense / np.linalg.norm(dense)
        lexical = np.sqrt(0.6) * lexical_part([ids], bucket, weight, 4.0, canonical=canonical)
        for marker, document in ((1, False), (2, True)):
            served = run([marker] + ids[1:])
            recipe = served_form(record, [ids], bucket, weight, 4.0, K1, B, dense[None], lexical, np.eye(width_dense + buckets), document, canonical)[0]
            np.testing.assert_allclose(served / np.linalg.norm(served), recipe, atol=1e-5)
        # the same text with each class's pieces spelled by its smallest one serves the same vector
        np.testing.assert_allclose(run(ids)[width_dense:], run([1, 10, 10, 10, 20, 20, 30, 3])[width_dense:], atol=1e-6)


class LexicalStepInputs(unittest.TestCase):
    def test_weights_must_be_three_shares_summing_to_one(self):
        self.assertEqual(parse_weights("0.2,0.2,0.6"), (0.2, 0.2, 0.6))
        for bad in ("0.5,0.5", "0.5,0.5,0.5", "a,b,c", "-0.1,0.6,0.5"):
            with self.assertRaises(SystemExit, msg=bad):
                parse_weights(bad)

    def test_term_weights_learned_with_other_classes_are_refused(self):
        canonical = stem_classes(VOCAB, STEM)
        idf = np.linspace(1.0, 3.0, len(canonical))
        idf[[0, 1, 2]] = 0.0
        idf = idf[canonical]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.npz")
            np.savez(path, weight=np.ones(len(idf)), idf=idf, step=1)
            with self.assertRaisesRegex(SystemExit, "pass --stems to both scripts"):
                read_term_weights(path, idf, canonical)
            np.savez(path, weight=np.ones(len(idf)), idf=idf, step=1, canonical=canonical)
            self.assertEqual(read_term_weights(path, idf, canonical)[1], 1)
            with self.assertRaisesRegex(SystemExit, "pass --stems to both scripts"):
                read_term_weights(path, idf, None)


if __name__ == "__main__":
    unittest.main()
