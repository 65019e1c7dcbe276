"""The lexical part as ONNX nodes: add_to_graph appends it (with the parts' shares and the identity
Matryoshka rotation) after a dense graph, strip_lexical takes it out again. The arithmetic is
model/rules/bm25.py's recipe; model/graph/lexical.py is the step that runs this."""
import numpy as np

from model.rules.bm25 import B, K1, graph_constants
from model.rules.tables import OUTPUT


def strip_lexical(graph_model):
    """Removes a lexical part (and the Matryoshka rotation) an earlier run added, leaving the dense
    graph whose output is OUTPUT again. Returns whether there was one."""
    g = graph_model.graph
    ours = lambda name: name.startswith(("lexical.", "matryoshka."))
    if not any(ours(t.name) for t in g.initializer):
        return False
    added = [n for n in g.node if any(ours(o) or o == OUTPUT for o in n.output)]
    outside = {i.name for i in g.input} | {t.name for t in g.initializer}
    # the one tensor the added nodes read that the dense graph made (named by whichever script wrote it)
    dense = {i for n in added for i in n.input if i and not ours(i) and i != OUTPUT and i not in outside}
    if len(dense) != 1:
        raise SystemExit(f"cannot find the dense graph's output under the lexical part (candidates: {sorted(dense)})")
    dense = dense.pop()
    keep = [n for n in g.node if n not in added]
    del g.node[:]
    g.node.extend(keep)
    keep_init = [t for t in g.initializer if not ours(t.name)]
    del g.initializer[:]
    g.initializer.extend(keep_init)
    for node in g.node:
        for k, name in enumerate(node.output):
            if name == dense:
                node.output[k] = OUTPUT
        for k, name in enumerate(node.input):  # model/graph/document_form.py's repaired ids
            if name == "lexical.document.input_ids":
                node.input[k] = "input_ids"
    return True


def add_to_graph(graph_model, bucket, weight, avg_len, parts, shares, normalise_dense=False, canonical=None):
    """Renames the graph's output to dense_hidden and appends the lexical part, the text's shares
    and the (identity) Matryoshka rotation after it. A hybrid's output is its unit parts per token
    (each times the square root of the share model/export/hybrid.py gave it), so their mean over the mask
    is the dense vector; a static model's is its masked token vectors, whose sum is made a unit
    vector here first. `parts` (3 × width) maps the three shares' square roots onto the components
    (undoing model/export/hybrid.py's); `shares` is a Shares. The vector is computed once per text and
    expanded over its tokens (lexembed mean-pools them). With `canonical` (model/sparse/stem_classes.py)
    the lexical part reads each id as its stem class's smallest piece (one Gather in front)."""
    from onnx import TensorProto, helper, numpy_helper  # onnx only where a graph is written (tests need numpy alone)
    g = graph_model.graph
    producers = [n for n in g.node if OUTPUT in n.output]
    if len(producers) != 1:
        raise SystemExit(f"the graph has no single node producing {OUTPUT}: not a model/export/hybrid.py folder")
    producer = producers[0]
    producer.output[list(producer.output).index(OUTPUT)] = "dense_hidden"
    buckets = int(bucket.max()) + 1
    width = parts.shape[1]
    inits = {
        "lexical.parts": parts.astype(np.float32),
        "lexical.short": np.asarray(shares.short, dtype=np.float32),
        "lexical.delta": np.asarray(shares.long, dtype=np.float32) - np.asarray(shares.short, dtype=np.float32),
        "lexical.length0": np.array(shares.lengths[0], dtype=np.float32),
        "lexical.length_span": np.array(shares.lengths[1] - shares.lengths[0], dtype=np.float32),
        "lexical.zero": np.array(0.0, dtype=np.float32),
        "lexical.one": np.array(1.0, dtype=np.float32),
        "lexical.bucket": bucket.astype(np.int64),
        "lexical.weight": weight.astype(np.float32),
        "lexical.counted": (weight != 0).astype(np.float32),
        "lexical.range": np.arange(buckets, dtype=np.int64),
        **{name: np.array(value, dtype=np.float32) for name, value in graph_constants(K1, B, avg_len).items()},
        "lexical.eps": np.array(1e-12, dtype=np.float32),
        "lexical.axis_last": np.array([-1], dtype=np.int64),
        "lexical.axis_one": np.array([1], dtype=np.int64),
        "lexical.axis_two": np.array([2], dtype=np.int64),
        "lexical.width": np.array([width], dtype=np.int64),
        "matryoshka.rotation": np.eye(width, dtype=np.float32),
    }
    if canonical is not None:
        inits["lexical.canonical"] = np.asarray(canonical, dtype=np.int64)
    g.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
    n = helper.make_node
    ids = "lexical.ids" if canonical is not None else "input_ids"  # what the term counts and tables read
    if canonical is not None:
        g.node.append(n("Gather", ["lexical.canonical", "input_ids"], [ids]))
    # The sum over tokens as mask · vectors (MatMul): its result does not depend on how much
    # padding the batch adds (ReduceSum's does, in the last bit), so a text's vector is the same
    # in every batch (lexembed embed --shard relies on that).
    g.node.extend([
        n("Cast", ["attention_mask"], ["lexical.mask"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["lexical.mask", "lexical.axis_one"], ["lexical.mask_row"]),  # B×1×L
        n("MatMul", ["lexical.mask_row", "dense_hidden"], ["lexical.dense_sum"]),  # B×1×D
    ])
    if normalise_dense:
        g.node.extend([
            *unit_nodes(n, "lexical.dense_sum", "lexical.dense_"),
            n("Identity", ["lexical.dense_unit"], ["lexical.dense"]),
        ])
    else:  # each token's row is already its text's unit parts ÷ the mean's norm: the mean is the vector
        g.node.extend([
            n("ReduceSum", ["lexical.mask_row", "lexical.axis_last"], ["lexical.count"], keepdims=1),
            n("Div", ["lexical.dense_sum", "lexical.count"], ["lexical.dense"]),
        ])
    g.node.extend([
        # tf of each position's piece: how many of the text's positions hold the same id
        n("Unsqueeze", [ids, "lexical.axis_two"], ["lexical.ids_col"]),  # B×L×1
        n("Unsqueeze", [ids, "lexical.axis_one"], ["lexical.ids_row"]),  # B×1×L
        n("Equal", ["lexical.ids_col", "lexical.ids_row"], ["lexical.same_bool"]),
        n("Cast", ["lexical.same_bool"], ["lexical.same"], to=TensorProto.FLOAT),  # B×L×L
        n("Mul", ["lexical.same", "lexical.mask_row"], ["lexical.same_kept"]),
        n("ReduceSum", ["lexical.same_kept", "lexical.axis_last"], ["lexical.tf3"], keepdims=1),  # B×L×1
        n("Squeeze", ["lexical.tf3", "lexical.axis_last"], ["lexical.tf"]),  # B×L
        # L: the text's counted pieces; K = k1·(1 − b + b·L/avg_len)
        n("Gather", ["lexical.counted", ids], ["lexical.ids_counted"]),
        n("Mul", ["lexical.ids_counted", "lexical.mask"], ["lexical.counted_kept"]),
        n("ReduceSum", ["lexical.counted_kept", "lexical.axis_last"], ["lexical.length"], keepdims=1),  # B×1
        n("Mul", ["lexical.length", "lexical.k1_per_length"], ["lexical.k_length"]),
        n("Add", ["lexical.k_length", "lexical.k1_fixed"], ["lexical.k"]),
        # each position carries weight·(k1 + 1)/(tf + K): its piece's positions sum to weight·sat(tf)
        n("Add", ["lexical.tf", "lexical.k"], ["lexical.denominator"]),
        n("Div", ["lexical.k1_plus_1", "lexical.denominator"], ["lexical.share"]),
        n("Gather", ["lexical.weight", ids], ["lexical.ids_weight"]),
        n("Mul", ["lexical.ids_weight", "lexical.mask"], ["lexical.weight_kept"]),
        n("Mul", ["lexical.weight_kept", "lexical.share"], ["lexical.token_weight"]),
        # into the buckets: token weights (B×1×L) · one-hot buckets (B×L×N)
        n("Gather", ["lexical.bucket", ids], ["lexical.ids_bucket"]),
        n("Unsqueeze", ["lexical.ids_bucket", "lexical.axis_last"], ["lexical.ids_bucket3"]),
        n("Equal", ["lexical.ids_bucket3", "lexical.range"], ["lexical.onehot_bool"]),
        n("Cast", ["lexical.onehot_bool"], ["lexical.onehot"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["lexical.token_weight", "lexical.axis_one"], ["lexical.token_weight3"]),
        n("MatMul", ["lexical.token_weight3", "lexical.onehot"], ["lexical.sums"]),  # B×1×N
        *unit_nodes(n, "lexical.sums", "lexical."),
        # the text's shares: short + t·(long − short), t = clip((L − length0)/span, 0, 1)
        n("Sub", ["lexical.length", "lexical.length0"], ["lexical.over"]),
        n("Div", ["lexical.over", "lexical.length_span"], ["lexical.ramp"]),
        n("Clip", ["lexical.ramp", "lexical.zero", "lexical.one"], ["lexical.t"]),  # B×1
        n("Mul", ["lexical.t", "lexical.delta"], ["lexical.shift"]),  # B×3
        n("Add", ["lexical.short", "lexical.shift"], ["lexical.shares"]),
        n("Sqrt", ["lexical.shares"], ["lexical.roots"]),
        n("Unsqueeze", ["lexical.roots", "lexical.axis_one"], ["lexical.roots3"]),  # B×1×3
        n("MatMul", ["lexical.roots3", "lexical.parts"], ["lexical.scales"]),  # B×1×W
        n("Concat", ["lexical.dense", "lexical.unit"], ["lexical.joined"], axis=-1),  # B×1×W
        n("Mul", ["lexical.joined", "lexical.scales"], ["matryoshka.parts"]),
        n("MatMul", ["matryoshka.parts", "matryoshka.rotation"], ["matryoshka.vector"]),
        n("Shape", ["input_ids"], ["lexical.ids_shape"]),
        n("Concat", ["lexical.ids_shape", "lexical.width"], ["lexical.tokens_shape"], axis=0),
        n("Expand", ["matryoshka.vector", "lexical.tokens_shape"], [OUTPUT]),
    ])
    del g.value_info[:]
    for output in g.output:
        dims = output.type.tensor_type.shape.dim
        if len(dims) == 3:
            dims[2].Clear()
            dims[2].dim_param = "hidden"


def unit_nodes(n, x, prefix):
    """x / max(|x|, eps) over the last axis, as nodes whose outputs are named prefix + squares,
    norm2, norm_raw, norm and unit."""
    return [
        n("Mul", [x, x], [prefix + "squares"]),
        n("ReduceSum", [prefix + "squares", "lexical.axis_last"], [prefix + "norm2"], keepdims=1),
        n("Sqrt", [prefix + "norm2"], [prefix + "norm_raw"]),
        n("Max", [prefix + "norm_raw", "lexical.eps"], [prefix + "norm"]),
        n("Div", [x, prefix + "norm"], [prefix + "unit"]),
    ]
