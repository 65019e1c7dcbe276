"""The model/ scripts import each other without a circle (lazy imports inside functions count):
a circle makes the order modules load in decide what works (issue 52)."""
import ast
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def local_imports(path, local):
    """The model/ modules a script imports anywhere in it (top level or inside a function)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return sorted(names & local)


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


class ImportGraph(unittest.TestCase):
    def test_no_circle(self):
        local = {f[:-3] for f in os.listdir(HERE) if f.endswith(".py")}
        graph = {m: [n for n in local_imports(os.path.join(HERE, m + ".py"), local) if n != m] for m in local}
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, f"model/ has an import circle: {' -> '.join(cycle or [])}")

    def test_finds_a_circle(self):
        self.assertEqual(find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}), ["a", "b", "c", "a"])
        self.assertIsNone(find_cycle({"a": ["b"], "b": [], "c": ["a", "b"]}))


if __name__ == "__main__":
    unittest.main()
