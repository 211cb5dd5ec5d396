"""The engine's Variant wire format (``core/io/marshalls.cpp``), both engines, both directions.

Every value starts with a 32-bit little-endian header: the type id in the low byte, flags above
it (bit 16: a 64-bit int or float, or an Object sent as its id; Godot 4's bits 16-19: the
element types of a typed Array or Dictionary). Strings are a byte length, UTF-8 and padding to
four bytes; containers a count (bit 31 is Godot 3's "shared" flag) and their items. The type
ids differ between the engines (Godot 4 added the integer vectors, StringName, Callable…), so
every call names the engine's major version.

Decoding is bounded, for a game is free to send anything: a value nests at most
``MAX_DEPTH`` deep, a count larger than the bytes left could hold is refused before anything
is allocated, and every failure is :class:`Malformed`. Values decode to plain Python (``None``,
``bool``, ``int``, ``float``, ``str``, ``list``) and, for the rest, to :class:`Value`, whose
:meth:`Value.json` and :func:`to_json` give the JSON shapes of docs/godot.md (Godot values
as JSON).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from godot_mcp.errors import Malformed

__all__ = [
    "MAX_DEPTH",
    "MAX_VALUES",
    "Dictionary",
    "Malformed",
    "ObjectId",
    "Packed",
    "Value",
    "decode",
    "encode",
]

MAX_DEPTH = 64  # nesting the decoder follows; the engine's own limit is deeper, ours is enough
MAX_VALUES = 1 << 20  # values decoded from one packet (a packed array's elements are not)

FLAG_64 = 1 << 16
TYPE_MASK = 0xFF


@dataclass(frozen=True)
class Value:
    """A Variant without a plain Python form: its engine type name and its fields."""

    type: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ObjectId:
    """An Object sent by its instance id (what the debugger sends for every object)."""

    id: int
    cls: str | None = None


@dataclass(frozen=True)
class Dictionary:
    """A Dictionary as its pairs, in the engine's order (keys may be any Variant)."""

    items: list[tuple[Any, Any]]


# The engines' type ids, in order (Godot 3: core/variant.h; Godot 4: core/variant/variant.h).
TYPES3 = tuple(
    [
        "Nil",
        "bool",
        "int",
        "float",
        "String",
        "Vector2",
        "Rect2",
        "Vector3",
        "Transform2D",
        "Plane",
        "Quat",
        "AABB",
        "Basis",
        "Transform",
        "Color",
        "NodePath",
        "RID",
        "Object",
        "Dictionary",
        "Array",
        "PoolByteArray",
        "PoolIntArray",
        "PoolRealArray",
        "PoolStringArray",
        "PoolVector2Array",
        "PoolVector3Array",
        "PoolColorArray",
    ]
)
TYPES4 = tuple(
    [
        "Nil",
        "bool",
        "int",
        "float",
        "String",
        "Vector2",
        "Vector2i",
        "Rect2",
        "Rect2i",
        "Vector3",
        "Vector3i",
        "Transform2D",
        "Vector4",
        "Vector4i",
        "Plane",
        "Quaternion",
        "AABB",
        "Basis",
        "Transform3D",
        "Projection",
        "Color",
        "StringName",
        "NodePath",
        "RID",
        "Object",
        "Callable",
        "Signal",
        "Dictionary",
        "Array",
        "PackedByteArray",
        "PackedInt32Array",
        "PackedInt64Array",
        "PackedFloat32Array",
        "PackedFloat64Array",
        "PackedStringArray",
        "PackedVector2Array",
        "PackedVector3Array",
        "PackedColorArray",
        "PackedVector4Array",
    ]
)

# Fixed-size values: (kind of number, field names). "r" is real_t (float, or double with
# FLAG_64), "f" always a float, "i" a 32-bit int.
_FIXED: dict[str, tuple[str, tuple[str, ...]]] = {
    "Vector2": ("r", ("x", "y")),
    "Vector2i": ("i", ("x", "y")),
    "Rect2": ("r", ("x", "y", "w", "h")),
    "Rect2i": ("i", ("x", "y", "w", "h")),
    "Vector3": ("r", ("x", "y", "z")),
    "Vector3i": ("i", ("x", "y", "z")),
    "Transform2D": ("r", ("xx", "xy", "yx", "yy", "ox", "oy")),
    "Vector4": ("r", ("x", "y", "z", "w")),
    "Vector4i": ("i", ("x", "y", "z", "w")),
    "Plane": ("r", ("x", "y", "z", "d")),
    "Quat": ("r", ("x", "y", "z", "w")),
    "Quaternion": ("r", ("x", "y", "z", "w")),
    "AABB": ("r", ("x", "y", "z", "w", "h", "d")),
    "Basis": ("r", tuple(f"{a}{b}" for a in "xyz" for b in "xyz")),
    "Transform": ("r", (*(f"{a}{b}" for a in "xyz" for b in "xyz"), "ox", "oy", "oz")),
    "Transform3D": ("r", (*(f"{a}{b}" for a in "xyz" for b in "xyz"), "ox", "oy", "oz")),
    "Projection": ("r", tuple(f"{a}{b}" for a in "xyzw" for b in "xyzw")),
    "Color": ("f", ("r", "g", "b", "a")),
}
_PACKED_NUMBERS = {  # element struct, Godot 4 name or Godot 3 name
    "PoolByteArray": "B",
    "PackedByteArray": "B",
    "PoolIntArray": "i",
    "PackedInt32Array": "i",
    "PackedInt64Array": "q",
    "PoolRealArray": "f",
    "PackedFloat32Array": "f",
    "PackedFloat64Array": "d",
}
_PACKED_VECTORS = {
    "PoolVector2Array": "Vector2",
    "PackedVector2Array": "Vector2",
    "PoolVector3Array": "Vector3",
    "PackedVector3Array": "Vector3",
    "PoolColorArray": "Color",
    "PackedColorArray": "Color",
    "PackedVector4Array": "Vector4",
}


def _types(major: int) -> tuple[str, ...]:
    return TYPES3 if major < 4 else TYPES4


_STRUCTS: dict[str, struct.Struct] = {}  # a format's compiled layout, made once


class _Reader:
    def __init__(self, data: bytes | memoryview, major: int) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.major = major
        self.types = _types(major)
        self.values = 0

    def spend(self, n: int = 1) -> None:
        """Count ``n`` more values decoded; past ``MAX_VALUES`` a packet is refused (a
        packet of 8 MiB of nils would otherwise be two million Python objects)."""
        self.values += n
        if self.values > MAX_VALUES:
            raise Malformed(f"one packet holds more than {MAX_VALUES} values")

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise Malformed(f"a value runs past the end of its {len(self.data)} bytes")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> Any:
        layout = _STRUCTS.get(fmt) or _STRUCTS.setdefault(fmt, struct.Struct("<" + fmt))
        end = self.pos + layout.size
        if end > len(self.data):
            raise Malformed(f"a value runs past the end of its {len(self.data)} bytes")
        values = layout.unpack_from(self.data, self.pos)
        self.pos = end
        return values[0] if len(values) == 1 else values

    def count(self, each: int, mask: int = 0x7FFFFFFF) -> int:
        """A container's length, refused when the bytes left cannot hold it (``each``: the
        fewest bytes one item takes)."""
        n = self.unpack("I") & mask
        if n * each > len(self.data) - self.pos:
            raise Malformed(f"a count of {n} items does not fit the bytes left")
        return n

    def string(self) -> str:
        n = self.count(1, 0xFFFFFFFF)
        start = self.pos
        self.pos += n + (-n % 4)
        if self.pos > len(self.data):
            raise Malformed(f"a value runs past the end of its {len(self.data)} bytes")
        try:
            return str(self.data[start : start + n], "utf-8")
        except UnicodeDecodeError:
            raise Malformed("a string is not UTF-8") from None

    def value(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise Malformed(f"values nest deeper than {MAX_DEPTH}")
        self.spend()
        header = self.unpack("I")
        kind = header & TYPE_MASK
        if kind >= len(self.types):
            raise Malformed(f"unknown type id {kind}")
        name = self.types[kind]
        wide = bool(header & FLAG_64)
        if name in ("String", "StringName"):  # the commonest first
            return self.string()
        if name == "int":
            return self.unpack("q" if wide else "i")
        if name == "Nil":
            return None
        if name == "bool":
            return bool(self.unpack("I"))
        if name == "int":
            return self.unpack("q" if wide else "i")
        if name == "float":
            return self.unpack("d" if wide else "f")
        if name in ("String", "StringName"):
            return self.string()
        if name in _FIXED:
            number, names = _FIXED[name]
            fmt = {"r": "d" if wide else "f", "f": "f", "i": "i"}[number] * len(names)
            return Value(name, dict(zip(names, self.unpack(fmt), strict=True)))
        if name == "NodePath":
            return Value("NodePath", {"path": self.node_path()})
        if name == "RID":
            return Value("RID", {"id": self.unpack("Q")} if self.major >= 4 else {})
        if name == "Object":
            return self.object(wide, depth)
        if name == "Callable":
            return Value("Callable")
        if name == "Signal":
            return Value("Signal", {"name": self.string(), "object": self.unpack("Q")})
        if name == "Dictionary":
            self.container_types(header, dictionary=True)
            n = self.count(8)
            return Dictionary([(self.value(depth + 1), self.value(depth + 1)) for _ in range(n)])
        if name == "Array":
            self.container_types(header, dictionary=False)
            n = self.count(4)
            return [self.value(depth + 1) for _ in range(n)]
        return self.packed(name, wide)

    def container_types(self, header: int, dictionary: bool) -> None:
        """Skip Godot 4's element types of a typed Array or Dictionary (4.1+)."""
        if self.major < 4:
            return
        kinds = [(header >> 16) & 3] + ([(header >> 18) & 3] if dictionary else [])
        for kind in kinds:
            if kind == 1:  # a built-in type
                self.unpack("I")
            elif kind in (2, 3):  # a class name, or a script's path
                self.string()

    def node_path(self) -> str:
        first = self.unpack("I")
        if not first & 0x80000000:  # the old form: the path as a string
            self.pos -= 4
            return self.string()
        names = first & 0x7FFFFFFF
        subnames, flags = self.unpack("II")
        if (names + subnames) * 4 > len(self.data) - self.pos:
            raise Malformed("a node path's names do not fit the bytes left")
        if self.major < 4 and flags & 2:  # Godot 3.0's property field, counted as a subname
            subnames += 1
        parts = [self.string() for _ in range(names)]
        subs = [self.string() for _ in range(subnames)]
        path = ("/" if flags & 1 else "") + "/".join(parts)
        return path + "".join(":" + s for s in subs)

    def object(self, as_id: bool, depth: int) -> Any:
        if as_id:
            return ObjectId(self.unpack("Q"))
        cls = self.string()
        if not cls:
            return None
        n = self.count(8)
        for _ in range(n):  # the properties, read past: an answer names the class only
            self.string()
            self.value(depth + 1)
        return ObjectId(0, cls)

    def packed(self, name: str, wide: bool) -> Any:
        """A packed array of numbers or vectors kept as its bytes (:class:`Packed`): a game's
        8 MiB of them costs 8 MiB here, never a Python object an element."""
        if name in ("PoolStringArray", "PackedStringArray"):
            n = self.count(4)
            self.spend(n)
            return Value(name, {"items": [self.string() for _ in range(n)]})
        names: tuple[str, ...] = ()
        if name in _PACKED_NUMBERS:
            fmt = _PACKED_NUMBERS[name]
        else:
            element = _PACKED_VECTORS[name]
            number, names = _FIXED[element]
            fmt = "f" if number == "f" or not wide else "d"
        width = struct.calcsize(fmt) * max(1, len(names))
        n = self.count(width)
        raw = bytes(self.take(n * width))
        self.take(-(n * width) % 4)
        return Value(name, {"items": Packed(_PACKED_VECTORS.get(name, ""), fmt, names, raw)})


@dataclass(frozen=True)
class Packed:
    """A packed array's elements as the engine sent them: ``element`` (a vector type, or
    empty for numbers), their number format, field names and bytes."""

    element: str
    fmt: str
    names: tuple[str, ...]
    raw: bytes

    def __len__(self) -> int:
        return len(self.raw) // (struct.calcsize(self.fmt) * max(1, len(self.names)))

    def values(self, limit: int | None = None) -> list[Any]:
        """The first ``limit`` elements (all by default): numbers, or :class:`Value` s."""
        n = len(self) if limit is None else min(limit, len(self))
        k = max(1, len(self.names))
        flat = struct.unpack_from(f"<{n * k}{self.fmt}", self.raw)
        if not self.names:
            return list(flat)
        return [
            Value(self.element, dict(zip(self.names, flat[i * k : i * k + k], strict=True)))
            for i in range(n)
        ]


def decode(data: bytes | memoryview, major: int) -> tuple[Any, int]:
    """One Variant of the engine ``major`` from the start of ``data``: the value and the
    bytes it used. :class:`Malformed` for anything else."""
    reader = _Reader(data, major)
    try:
        return reader.value(), reader.pos
    except struct.error:
        raise Malformed("a value runs past its bytes") from None
    except RecursionError:
        raise Malformed("values nest too deep") from None


def decode_all(data: bytes | memoryview, major: int) -> Any:
    """Exactly one Variant filling ``data``."""
    value, used = decode(data, major)
    if used != len(data):
        raise Malformed(f"{len(data) - used} bytes follow the value")
    return value


def _pad(raw: bytes) -> bytes:
    return raw + b"\0" * (-len(raw) % 4)


def encode(value: Any, major: int) -> bytes:
    """``value`` (``None``, ``bool``, ``int``, ``float``, ``str``, ``list``, ``dict`` with
    string keys, :class:`Dictionary`, :class:`Value` of a fixed-size type) as the engine
    ``major`` reads it. ``TypeError`` for anything else."""
    types = _types(major)

    def head(name: str, flags: int = 0) -> bytes:
        return struct.pack("<I", types.index(name) | flags)

    def string(text: str) -> bytes:
        raw = text.encode("utf-8")
        return struct.pack("<I", len(raw)) + _pad(raw)

    def one(v: Any) -> bytes:
        if v is None:
            return head("Nil")
        if isinstance(v, bool):
            return head("bool") + struct.pack("<I", int(v))
        if isinstance(v, int):
            if -(2**31) <= v < 2**31:
                return head("int") + struct.pack("<i", v)
            return head("int", FLAG_64) + struct.pack("<q", v)
        if isinstance(v, float):
            return head("float", FLAG_64) + struct.pack("<d", v)
        if isinstance(v, str):
            return head("String") + string(v)
        if isinstance(v, list | tuple):
            return head("Array") + struct.pack("<I", len(v)) + b"".join(one(x) for x in v)
        if isinstance(v, dict):
            v = Dictionary(list(v.items()))
        if isinstance(v, Dictionary):
            pairs = b"".join(one(k) + one(x) for k, x in v.items)
            return head("Dictionary") + struct.pack("<I", len(v.items)) + pairs
        if isinstance(v, Value) and v.type in _FIXED:
            number, names = _FIXED[v.type]
            fmt = {"r": "f", "f": "f", "i": "i"}[number] * len(names)
            return head(v.type) + struct.pack("<" + fmt, *(v.fields[n] for n in names))
        raise TypeError(f"cannot encode {type(v).__name__}")

    return one(value)


# --- Godot values as JSON -------------------------------------------------------------------------

MAX_ITEMS = 1000
MAX_CHARS = 10_000
MAX_JSON_DEPTH = 8


def _number(x: float) -> Any:
    if math.isfinite(x):
        return x
    return {"type": "float", "value": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _columns(f: dict[str, Any], axes: str) -> dict[str, list[Any]]:
    """A matrix sent row by row (``xy``: row x, column y) as its column vectors, as the JSON
    shapes and the engines' ``basis.x`` name them."""
    return {c: [_number(f[f"{r}{c}"]) for r in axes] for c in axes}


def _shape(v: Value) -> dict[str, Any]:
    f = v.fields
    t = v.type
    if t == "Transform2D":
        return {
            "type": t,
            "x": [_number(f["xx"]), _number(f["xy"])],
            "y": [_number(f["yx"]), _number(f["yy"])],
            "origin": [_number(f["ox"]), _number(f["oy"])],
        }
    if t == "Basis":
        return {"type": t, **_columns(f, "xyz")}
    if t in ("Transform", "Transform3D"):
        origin = [_number(f["ox"]), _number(f["oy"]), _number(f["oz"])]
        return {"type": t, "basis": {"type": "Basis", **_columns(f, "xyz")}, "origin": origin}
    if t == "Projection":
        return {"type": t, **_columns(f, "xyzw")}
    if t == "NodePath":
        return {"type": t, "path": f["path"]}
    return {"type": t, **{k: _number(x) if isinstance(x, float) else x for k, x in f.items()}}


Describe = Callable[[int], dict[str, Any]]


def to_json(value: Any, depth: int = 0, describe: Describe | None = None) -> Any:
    """``value`` (from :func:`decode`) as JSON (docs/godot.md), within its bounds: depth 8,
    1,000 items a container, 10,000 characters a string, each cut said where it is.
    ``describe``: what is known of an object id (``class``, ``path``)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        if len(value) <= MAX_CHARS:
            return value
        head = value[:MAX_CHARS]
        return {"type": "String", "truncated": True, "length": len(value), "head": head}
    if depth >= MAX_JSON_DEPTH:
        size = value.items if isinstance(value, Dictionary) else value
        return {"type": "truncated", "remaining": len(size) if isinstance(size, list) else 1}
    if isinstance(value, ObjectId):
        shown: dict[str, Any] = {"type": "Object", "id": value.id}
        if value.cls:
            shown["class"] = value.cls
        if describe is not None and value.id:
            shown.update(describe(value.id))
        return shown
    if isinstance(value, list):
        return _items(value, depth, describe)
    if isinstance(value, Dictionary):
        pairs = value.items
        keys = [k for k, _ in pairs]
        plain = all(isinstance(k, str) for k in keys) and "type" not in keys
        if plain and len(pairs) <= MAX_ITEMS:
            return {k: to_json(x, depth + 1, describe) for k, x in pairs}
        items = _items([[k, x] for k, x in pairs], depth, describe)
        return {"type": "Dictionary", "items": items}
    if isinstance(value, Value):
        if "items" in value.fields:
            items = value.fields["items"]
            if isinstance(items, Packed):  # only what is shown is unpacked
                first = _items(items.values(MAX_ITEMS), depth, describe)
                if len(items) > MAX_ITEMS:
                    first.append({"type": "truncated", "remaining": len(items) - MAX_ITEMS})
                return {"type": value.type, "items": first}
            return {"type": value.type, "items": _items(items, depth, describe)}
        return _shape(value)
    return {"type": type(value).__name__}


def _items(values: list[Any], depth: int, describe: Describe | None) -> list[Any]:
    shown = [to_json(x, depth + 1, describe) for x in values[:MAX_ITEMS]]
    if len(values) > MAX_ITEMS:
        shown.append({"type": "truncated", "remaining": len(values) - MAX_ITEMS})
    return shown
