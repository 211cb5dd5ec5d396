"""The one error tree (``godot_mcp/errors.py``), read from the package: every exception class
it defines is under ``GodotMcpError`` and drawn in the tree where it belongs, with its module,
and no handler of the MCP edge catches a typed failure to raise another in its place."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import godot_mcp
from godot_mcp import errors
from godot_mcp.errors import GodotMcpError

PACKAGE = Path(godot_mcp.__file__).resolve().parent

# Exceptions that never leave the module that defines them: raised and caught there, the
# words a client reads made there from them. Nothing else may stand outside the tree.
NEVER_LEAVE = {
    # FloodGate.count raises it, Debugger.run (same module) catches it and says the loss.
    "godot_mcp.engine.debugger.session.Flooded",
    # check_template's helpers raise these, check_template (same module) says TemplateRefused.
    "godot_mcp.features.export.templates._NotTemplate",
    "godot_mcp.features.export.templates._Private",
}


def _modules() -> list[ModuleType]:
    found = [godot_mcp]
    for info in pkgutil.walk_packages(godot_mcp.__path__, "godot_mcp."):
        found.append(importlib.import_module(info.name))
    return found


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class the package defines, by its dotted name."""
    out: dict[str, type[BaseException]] = {}
    for module in _modules():
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
            ):
                out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return out


def _nested_exception_classes() -> list[str]:
    """Classes defined inside a function or a class that name an exception base: an import
    cannot see them, so none may exist."""
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and id(node) not in top:
                bases = [ast.unparse(b) for b in node.bases]
                if any(re.search(r"Error|Exception|Failed|Unavailable|Timeout", b) for b in bases):
                    wrong.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    return wrong


Node = tuple[str, str, str | None]  # name, module column ("" in errors.py), parent's name


def drawn_tree(doc: str) -> list[Node]:
    """The tree a docstring draws: each class's name, the module written beside it and the
    class it hangs under."""
    lines = doc.split("::", 1)[1].splitlines()
    nodes: list[Node] = []
    path: list[str] = []
    for line in lines:
        if not line.startswith("    ") or not line.strip():
            if nodes:
                break
            continue
        match = re.match(r"((?:│   |    )*)(?:[├└]── )?(\w+)\s*(\S*)", line[4:])
        assert match is not None, line
        depth = len(match.group(1)) // 4 + (1 if re.search(r"[├└]── ", line) else 0)
        name, rest = match.group(2), match.group(3)
        module = rest if re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", rest) else ""
        del path[depth:]
        nodes.append((name, module, path[-1] if path else None))
        path.append(name)
    return nodes


def test_every_exception_of_the_package_is_in_the_tree() -> None:
    classes = _exception_classes()
    outside = sorted(
        name
        for name, cls in classes.items()
        if not issubclass(cls, GodotMcpError) and name not in NEVER_LEAVE
    )
    assert outside == []
    assert _nested_exception_classes() == []


def test_what_never_leaves_its_module_is_named_nowhere_else() -> None:
    named = []
    for dotted in sorted(NEVER_LEAVE):
        module, name = dotted.rsplit(".", 1)
        home = PACKAGE.parent / (module.replace(".", "/") + ".py")
        assert re.search(rf"^class {name}\(", home.read_text(), re.M), dotted
        for path in PACKAGE.rglob("*.py"):
            if path != home and re.search(rf"\b{name}\b", path.read_text()):
                named.append(f"{dotted} in {path.relative_to(PACKAGE)}")
    assert named == []


def test_the_docstring_draws_the_whole_tree_as_it_is() -> None:
    assert errors.__doc__ is not None
    nodes = drawn_tree(errors.__doc__)
    names = [n for n, _, _ in nodes]
    assert len(names) == len(set(names)), "a class drawn twice"
    in_tree = {
        cls.__qualname__: cls
        for cls in _exception_classes().values()
        if issubclass(cls, GodotMcpError)
    }
    assert len(in_tree) == len({c for c in in_tree.values()}), "two classes of one name"
    assert sorted(names) == sorted(in_tree)
    wrong = []
    for name, module, parent in nodes:
        cls = in_tree[name]
        where = cls.__module__.removeprefix("godot_mcp.")
        if (where if where != "errors" else "") != module:
            wrong.append(f"{name} is in {where}, drawn as in {module or 'errors'}")
        if parent is None:
            if cls is not GodotMcpError:
                wrong.append(f"{name} drawn as the root")
        elif not issubclass(cls, in_tree[parent]):
            wrong.append(f"{name} drawn under {parent}, which it is not")
        elif cls.outcome != in_tree[parent].outcome and parent != "GodotMcpError":
            wrong.append(f"{name} has outcome {cls.outcome}, under {parent}'s")
    assert wrong == []


def test_a_game_says_what_no_protocol_sends_with_one_class_on_every_channel() -> None:
    from godot_mcp.engine.debugger import variant
    from godot_mcp.features.game import protocol

    assert variant.Malformed is protocol.Malformed is errors.Malformed
    assert errors.Malformed.outcome == "failed"


def test_the_drawing_is_read_as_drawn() -> None:
    doc = """x::

    GodotMcpError      outcome
    ├── Failed         failed
    │   └── Malformed  godot.game.protocol  words
    └── Timeout
        └── GameTimeout  godot.game.errors

    after
    """
    assert drawn_tree(doc) == [
        ("GodotMcpError", "", None),
        ("Failed", "", "GodotMcpError"),
        ("Malformed", "godot.game.protocol", "Failed"),
        ("Timeout", "", "GodotMcpError"),
        ("GameTimeout", "godot.game.errors", "Timeout"),
    ]


# --- the edge catches no typed failure to raise another ------------------------------------


def _resolve(node: ast.expr, namespace: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, namespace)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def _raises_typed(value: Any) -> bool:
    """Whether raising ``value`` (a class, or a function's result) raises a GodotMcpError;
    True when that cannot be told."""
    if inspect.isclass(value):
        return issubclass(value, GodotMcpError)
    if callable(value):
        try:
            made = typing.get_type_hints(value).get("return")
        except Exception:
            return True
        return not (inspect.isclass(made) and not issubclass(made, GodotMcpError))
    return True


def renames(source: str, namespace: dict[str, Any]) -> list[str]:
    """The handlers in ``source`` that catch a GodotMcpError (by a class ``namespace``
    names) and raise a GodotMcpError other than the one caught."""
    found = []
    for handler in ast.walk(ast.parse(source)):
        if not isinstance(handler, ast.ExceptHandler) or handler.type is None:
            continue
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        caught = [_resolve(k, namespace) for k in kinds]
        if not any(inspect.isclass(c) and issubclass(c, GodotMcpError) for c in caught):
            continue
        for node in ast.walk(handler):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            if isinstance(node.exc, ast.Name) and node.exc.id == handler.name:
                continue  # the same error, raised on
            made = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if _raises_typed(_resolve(made, namespace)):
                line = ast.unparse(handler.type)
                found.append(f"line {handler.lineno}: except {line}: raise {ast.unparse(made)}")
    return found


def test_no_tool_handler_catches_a_typed_failure_to_raise_another() -> None:
    wrong = []
    paths = [*(PACKAGE / "mcp").glob("*.py"), *(PACKAGE / "features").glob("*/tools*.py")]
    assert len(paths) > 15
    for path in sorted(paths):
        rel = path.relative_to(PACKAGE)
        module = importlib.import_module("godot_mcp." + ".".join(rel.with_suffix("").parts))
        for found in renames(path.read_text(), vars(module)):
            wrong.append(f"{rel} {found}")
    assert wrong == []


def test_a_rename_is_found() -> None:
    from godot_mcp.engine.debugger import NoSelf, NotStopped
    from godot_mcp.errors import InvalidArgument, Unavailable
    from godot_mcp.features.game import stopped_error

    def mapped(exc: NotStopped) -> Unavailable:
        return Unavailable(exc.message)

    namespace = {
        "InvalidArgument": InvalidArgument,
        "NoSelf": NoSelf,
        "NotStopped": NotStopped,
        "stopped_error": stopped_error,
        "mapped": mapped,
        "MCPError": RuntimeError,
    }
    source = """
async def handler():
    try:
        pass
    except NoSelf as exc:
        raise InvalidArgument(str(exc)) from None
    except (KeyError, NotStopped) as exc:
        raise mapped(exc) from None
    except NotStopped:
        raise stopped_error("here")
    except NotStopped as exc:
        raise unknown(exc)
    except NotStopped as exc:
        raise
    except NotStopped as exc:
        raise exc
    except NotStopped:
        raise MCPError("the protocol's own error")
    except KeyError:
        raise InvalidArgument("not a typed failure caught")
"""
    assert renames(source, namespace) == [
        "line 5: except NoSelf: raise InvalidArgument",
        "line 7: except (KeyError, NotStopped): raise mapped",
        "line 9: except NotStopped: raise stopped_error",
        "line 11: except NotStopped: raise unknown",
    ]
