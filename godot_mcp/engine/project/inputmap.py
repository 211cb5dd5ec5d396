"""A project's input map, read from ``project.godot``'s ``[input]`` section, each event in the
form ``runtime.input.send`` takes.

Every key of ``[input]`` is an action, whatever its value (the engine adds it so); its events
are the value's ``"events"`` list when the value is a Dictionary (``{"deadzone": …, "events":
[…]}``, both engines), else none. A built-in ``ui_*`` action is in the file only when the
project changed it (the editors write no default), so it is listed exactly then.

An item of ``"events"`` that is not an ``Object(InputEvent…)`` is no event (the engine drops
it too) and is left out. An input event becomes:

* ``{"type": "key", "key": NAME}``, with ``"shift"``/``"ctrl"``/``"alt"``/``"meta": true``
  for the modifiers the action asks for. The code is the first set of those the running
  engine matches a key by (``EngineProfile.key_codes``): Godot 4's ``keycode``, else
  ``physical_keycode``, else ``key_label``; Godot 3's ``scancode``, else ``physical_scancode``
  (3.3+). Its name is from that numbering's table (``keys.py``). A key written in the other
  major's properties (a Godot 3 project on Godot 4) matches nothing there: unknown. Godot 4's
  ``command_or_control_autoremap`` is Ctrl (the games run on Linux);
* ``{"type": "mouse_button", "button": "left"}`` (``right``, ``middle``, ``wheel_up``,
  ``wheel_down``), with ``"double_click": true`` when it asks for one;
* ``{"type": "joypad_button", "button": N}`` (0–127) and
  ``{"type": "joypad_motion", "axis": N, "value": V}`` (axis 0–9, value in -1..1);
* ``{"type": "action", "action": NAME}`` for an action event;
* ``{"type": "unknown", "class": CLASS}`` (and ``"device": N`` when it is bound to
  another device than the first) for any other input event, or one that
  ``runtime.input.send`` cannot make: a touch, a gesture, MIDI, a key whose code has no name,
  another mouse button or a click with modifiers, and any event bound to a device other than
  the first (``runtime.input.send`` plays device 0, which an event of every device matches
  too: a second player's joypad is no event it can make).

An action lists at most :data:`MAX_EVENTS` events; past them one
``{"type": "truncated", "remaining": N}`` says how many more it has. Nothing here raises on
what the file holds: every value is checked for its type before it is used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from godot_mcp.engine.profile import EngineProfile
from godot_mcp.engine.project.keys import KEYCODES, SCANCODES
from godot_mcp.engine.project.presets import GodotObject

__all__ = ["MAX_EVENTS", "event_json", "read_input_map"]

MAX_EVENTS = 100
MAX_BUTTON = 127  # the engines' JOY_BUTTON_MAX is 128 (Godot 3.2 says 16, and takes up to 127)
MAX_AXIS = 9  # JOY_AXIS_MAX is 10 on both
ALL_DEVICES = -1  # an event of the map bound to no device in particular
_MAX_CLASS = 64
# The mouse buttons runtime.input.send presses, by the engines' button_index (1 to 5).
_MOUSE_BUTTONS = dict(enumerate(("left", "right", "middle", "wheel_up", "wheel_down"), start=1))
# The properties a key event may carry its code in, each with its numbering's names; an
# engine matches by its own (EngineProfile.key_codes), in its order.
_KEY_NAMES = {
    "keycode": KEYCODES,
    "physical_keycode": KEYCODES,
    "key_label": KEYCODES,
    "scancode": SCANCODES,
    "physical_scancode": SCANCODES,
}
_Codes = tuple[tuple[str, dict[int, str]], ...]
# Each modifier a key event may ask for: the property names of Godot 4, then Godot 3.
_MODIFIERS = (
    ("shift", ("shift_pressed", "shift")),
    ("ctrl", ("ctrl_pressed", "control", "command_or_control_autoremap")),
    ("alt", ("alt_pressed", "alt")),
    ("meta", ("meta_pressed", "meta")),
)


def read_input_map(
    config: Mapping[str, Mapping[str, object]], engine: EngineProfile
) -> dict[str, list[dict[str, Any]]]:
    """Each action of the parsed ``project.godot`` (``parse_config``'s sections) with its
    events as ``engine`` matches them, in the file's order."""
    section = config.get("input")
    if not isinstance(section, Mapping):
        return {}
    codes = tuple((prop, _KEY_NAMES[prop]) for prop in engine.key_codes if prop in _KEY_NAMES)
    return {str(name): _events(value, codes) for name, value in section.items()}


def _events(action: object, codes: _Codes) -> list[dict[str, Any]]:
    listed = action.get("events") if isinstance(action, Mapping) else None
    if not isinstance(listed, list):
        return []
    events = [
        e
        for e in listed
        if isinstance(e, GodotObject)
        and e.class_name.startswith("InputEvent")
        and len(e.class_name) <= _MAX_CLASS
    ]
    out = [event_json(e, codes) for e in events[:MAX_EVENTS]]
    if len(events) > MAX_EVENTS:
        out.append({"type": "truncated", "remaining": len(events) - MAX_EVENTS})
    return out


def event_json(event: GodotObject, codes: _Codes) -> dict[str, Any]:
    """One input event of the map as ``runtime.input.send`` takes it, or as unknown; a key
    by the first of ``codes`` (properties and their names) it has."""
    props = event.properties
    found: dict[str, Any] | None = None
    if event.class_name == "InputEventKey":
        found = _key(props, codes)
    elif event.class_name == "InputEventMouseButton":
        found = _mouse_button(props)
    elif event.class_name == "InputEventJoypadButton":
        found = _joypad_button(props)
    elif event.class_name == "InputEventJoypadMotion":
        found = _joypad_motion(props)
    elif event.class_name == "InputEventAction":
        found = _action(props)
    if found is not None:
        return found
    unknown: dict[str, Any] = {"type": "unknown", "class": event.class_name}
    device = _int(props.get("device", 0))
    if device is not None and device not in (0, ALL_DEVICES):
        unknown["device"] = device  # why it cannot be sent: another player's
    return unknown


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first_device(props: Mapping[str, object]) -> bool:
    """Whether an event of device 0 matches the event: it is bound to it, or to every one."""
    return _int(props.get("device", 0)) in (0, ALL_DEVICES)


def _key(props: Mapping[str, object], codes: _Codes) -> dict[str, Any] | None:
    if not _first_device(props):
        return None
    for prop, names in codes:
        code = _int(props.get(prop))
        if code:  # 0 (none) or absent: the engine matches by the next
            name = names.get(code)
            if name is None:
                return None
            out: dict[str, Any] = {"type": "key", "key": name}
            for modifier, spelled in _MODIFIERS:
                if any(props.get(p) is True for p in spelled):
                    out[modifier] = True
            return out
    return None


def _mouse_button(props: Mapping[str, object]) -> dict[str, Any] | None:
    button = _MOUSE_BUTTONS.get(_int(props.get("button_index")) or 0)
    if button is None or not _first_device(props):
        return None
    if any(props.get(p) is True for _, spelled in _MODIFIERS for p in spelled):
        return None  # Godot 4 matches a click's modifiers too; a sent click has none
    out: dict[str, Any] = {"type": "mouse_button", "button": button}
    if props.get("double_click") is True or props.get("doubleclick") is True:
        out["double_click"] = True
    return out


def _joypad_button(props: Mapping[str, object]) -> dict[str, Any] | None:
    button = _int(props.get("button_index", 0))
    if button is None or not 0 <= button <= MAX_BUTTON or not _first_device(props):
        return None
    return {"type": "joypad_button", "button": button}


def _joypad_motion(props: Mapping[str, object]) -> dict[str, Any] | None:
    axis = _int(props.get("axis", 0))
    value = props.get("axis_value", 0.0)
    if axis is None or not 0 <= axis <= MAX_AXIS or not _first_device(props):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    value = max(-1.0, min(1.0, float(value)))  # only its side and size against the deadzone count
    return {"type": "joypad_motion", "axis": axis, "value": value}


def _action(props: Mapping[str, object]) -> dict[str, Any] | None:
    name = props.get("action")
    if not isinstance(name, str) or not name or not _first_device(props):
        return None
    return {"type": "action", "action": str(name)}
