"""The pure core remembers nothing between calls: what a caller wants kept from pass to pass is in
the ``passcache.PassCache`` it owns and hands in. So no module of ``controller/core`` holds a
module-level table that fills up as it runs: an empty dict, list or set, a container built by a
call (``dict()``, ``defaultdict(...)``, ``OrderedDict()``...), a memo (``ByIdentity``,
``Interned``), or a function memoised with ``functools.cache`` / ``lru_cache``. Constant tables
(a dict or set written out with its entries) are fine."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "controller" / "core"

# Calls that build a container or a memo that a module would fill as it runs.
FILLABLE_CALLS = frozenset(
    {
        "dict",
        "list",
        "set",
        "defaultdict",
        "OrderedDict",
        "deque",
        "Counter",
        "ByIdentity",
        "Interned",
        "WeakKeyDictionary",
        "WeakValueDictionary",
    }
)
MEMO_DECORATORS = frozenset({"cache", "lru_cache", "cached_property"})
# Module-level names allowed although they look fillable, with why.
ALLOWED = {
    "_EMPTY": "a read-only default for ``.get(...) or _EMPTY`` on the hot path (never written)",
}


def _called_name(node: ast.expr) -> str | None:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _fillable(value: ast.expr) -> bool:
    if isinstance(value, ast.Dict) and not value.keys:
        return True
    if isinstance(value, (ast.List, ast.Set)) and not value.elts:
        return True
    return isinstance(value, ast.Call) and _called_name(value) in FILLABLE_CALLS


def _decorator_name(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def module_level_caches(path: Path, root: Path = CORE) -> list[str]:
    """Each module-level table or memoised function of the module at ``path``, as "file:line name"
    (the file relative to ``root``)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_decorator_name(d) in MEMO_DECORATORS for d in node.decorator_list):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} (memoised)")
            continue
        else:
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if names and _fillable(value) and not all(name in ALLOWED for name in names):
            found.append(f"{path.relative_to(root)}:{node.lineno} {', '.join(names)}")
    return found


def test_no_module_of_the_pure_core_keeps_a_cache_at_module_level():
    found = [entry for path in sorted(CORE.rglob("*.py")) for entry in module_level_caches(path)]
    assert found == []


def test_the_check_finds_each_kind_of_module_level_cache_and_leaves_constant_tables(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text(
        "import functools\n"
        "_PARSED = {}\n"
        "_SEEN: list[str] = []\n"
        "_MEMO = ByIdentity(len)\n"
        "_KEYS = Interned(10)\n"
        "_BY_NAME = collections.defaultdict(list)\n"
        "TABLE = {'a': 1}\n"
        "_EMPTY = {}\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def parse(x):\n"
        "    return x\n"
    )
    assert module_level_caches(path, tmp_path) == [
        "sample.py:2 _PARSED",
        "sample.py:3 _SEEN",
        "sample.py:4 _MEMO",
        "sample.py:5 _KEYS",
        "sample.py:6 _BY_NAME",
        "sample.py:10 parse (memoised)",
    ]
