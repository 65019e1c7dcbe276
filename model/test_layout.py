"""model/'s shape, checked as src/'s is: the stages import only the stages before them in STAGES
(lazy imports inside functions count, and so do tests), so there is no import circle; every Python
file is a step pipeline.sh names (it runs it, or lists it among the steps run elsewhere, or runs it
through the GPU kit's scripts), a module one of those imports, or a test; no file is over 400 lines
and no folder holds more than 12 files. `npm run test:model` runs it, and so CI."""
import ast
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Each stage may import itself and the stages before it; model/README.md says why this order.
STAGES = ("common", "rules", "evaluate", "data", "sparse", "export", "graph", "runtime", "train", "gpu")
MAX_LINES = 400
MAX_FILES = 12
# pipeline.sh, and the GPU kit's scripts it names (they run steps on the GPU machine).
ENTRY_FILES = ("model/pipeline.sh", "model/gpu/v4.sh", "model/gpu/train_on_gpu.sh")
STEP = re.compile(r"\bmodel\.(?:" + "|".join(STAGES) + r")\.\w+")


def modules():
    """{"model.stage.name": path} of every Python file under model/ (work/ and caches aside)."""
    out = {}
    for folder, dirs, files in os.walk(HERE):
        dirs[:] = sorted(d for d in dirs if d not in ("work", "__pycache__"))
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def local_imports(path, known):
    """The model.* modules a file imports anywhere in it (top level or inside a function)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return sorted(n for n in names if n in known)


def stage_of(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else None  # model.<stage>.<file>; model/ itself: None


def find_cycle(graph):
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def named_steps():
    """The modules the entry files name (model.stage.step), as pipeline.sh's `step` or `python3 -m` runs them."""
    found = set()
    for entry in ENTRY_FILES:
        with open(os.path.join(ROOT, entry), encoding="utf-8") as f:
            text = f.read()
        found.update(STEP.findall(text))
        if re.search(r"-m model\.evaluate (held-out|dev|store)\b", text):
            found.add("model.evaluate.__main__")  # the evaluator's modes
    return found


class Layout(unittest.TestCase):
    def setUp(self):
        self.modules = modules()
        self.graph = {m: [n for n in local_imports(p, self.modules) if n != m] for m, p in self.modules.items()}

    def test_no_circle(self):
        cycle = find_cycle(self.graph)
        self.assertIsNone(cycle, f"model/ has an import circle: {' -> '.join(cycle or [])}")

    def test_stages_import_only_earlier_stages(self):
        wrong = []
        for module, imported in self.graph.items():
            here = stage_of(module)
            for other in imported:
                there = stage_of(other)
                if here is None or there is None:
                    continue
                self.assertIn(here, STAGES, f"{module}: its folder is not a stage in STAGES")
                if STAGES.index(there) > STAGES.index(here):
                    wrong.append(f"{module} ({here}) imports {other} ({there})")
        self.assertEqual(wrong, [], f"a stage imports only itself and the stages before it ({' < '.join(STAGES)})")

    def test_every_file_is_a_step_a_module_a_step_uses_or_a_test(self):
        reached, todo = set(), [m for m in named_steps() if m in self.modules]
        missing = sorted(m for m in named_steps() if m not in self.modules)
        self.assertEqual(missing, [], "the entry files name modules that do not exist")
        todo += [m for m in self.modules if m.rsplit(".", 1)[-1].startswith("test_")]
        while todo:
            module = todo.pop()
            if module not in reached:
                reached.add(module)
                todo.extend(self.graph[module])
        packages = {m for m, p in self.modules.items() if p.endswith("__init__.py")}
        self.assertEqual(sorted(set(self.modules) - reached - packages), [],
                         f"every Python file is run by one of {ENTRY_FILES}, imported by one that is, or a test")

    def test_no_file_over_400_lines(self):
        long = []
        for folder, dirs, files in os.walk(HERE):
            dirs[:] = [d for d in dirs if d not in ("work", "__pycache__")]
            for f in files:
                with open(os.path.join(folder, f), encoding="utf-8", errors="replace") as handle:
                    lines = sum(1 for _ in handle)
                if lines > MAX_LINES:
                    long.append(f"{os.path.relpath(os.path.join(folder, f), ROOT)}: {lines}")
        self.assertEqual(long, [], f"files over {MAX_LINES} lines")

    def test_no_folder_over_12_files(self):
        crowded = []
        for folder, dirs, files in os.walk(HERE):
            dirs[:] = [d for d in dirs if d not in ("work", "__pycache__")]
            if len(files) > MAX_FILES:
                crowded.append(f"{os.path.relpath(folder, ROOT)}: {len(files)}")
        self.assertEqual(crowded, [], f"folders with more than {MAX_FILES} files")

    def test_the_checks_can_fail(self):
        self.assertEqual(find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}), ["a", "b", "c", "a"])
        self.assertIsNone(find_cycle({"a": ["b"], "b": [], "c": ["a", "b"]}))
        self.assertEqual(stage_of("model.graph.lexical"), "graph")
        self.assertEqual(STEP.findall('step "4c" model.graph.lexical --model x; python3 -m model.evaluate.dev'), ["model.graph.lexical", "model.evaluate.dev"])
        self.assertIsNone(stage_of("model.test_layout"))


if __name__ == "__main__":
    unittest.main()
