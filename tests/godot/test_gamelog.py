"""The game log's parser and buffer (pure logic, on top of the real-Godot log tests)."""

from __future__ import annotations

import pytest

from godot_mcp.engine.process.engine_lines import first_reason
from godot_mcp.features.game.log import MAX_LINE, GameLog, decode_cursor, encode_cursor


def test_godot_3_and_4_locations_fold_into_the_entry_before_them_in_their_stream() -> None:
    log = GameLog()
    log.feed("stderr", b"SCRIPT ERROR: _boom: Attempt to call function 'x' in base 'null'.\n")
    log.feed("stdout", b"printed meanwhile\n")
    log.feed("stderr", b"   At: res://lab.gd:11.\n")
    log.feed("stderr", b"ERROR: Something failed.\n   at: _ready (res://ui/menu.gd:7)\n")
    log.feed(
        "stderr",
        b"   GDScript backtrace (most recent call first):\n       [0] _ready (res://ui/menu.gd:7)\n",
    )
    log.feed("stderr", b"WARNING: careful\n   At: core/object.cpp:1234.\n")
    log.feed("stderr", b"ERROR: poll: res://bad.tscn:3 - Parse Error: broken\n")
    log.feed("stdout", b"   indented print stays a print\n")
    log.feed("stdout", b"")
    log.feed("stderr", b"")
    entries = [e.as_dict() for e in log.read(None, 100).entries]
    assert [(e["level"], e.get("source")) for e in entries] == [
        ("error", {"path": "res://lab.gd", "line": 11}),
        ("print", None),
        ("error", {"path": "res://ui/menu.gd", "line": 7}),
        ("warning", None),
        ("error", {"path": "res://bad.tscn", "line": 3}),
        ("print", None),
    ]
    assert entries[5]["text"] == "   indented print stays a print"


def test_long_lines_are_cut_and_flagged() -> None:
    log = GameLog()
    log.feed("stdout", b"x" * (MAX_LINE + 50) + b"\nkept\n")
    entries = log.read(None, 10).entries
    assert [len(e.text) for e in entries] == [MAX_LINE, 4]
    assert entries[0].truncated is True and entries[1].truncated is False


def test_no_line_is_dropped_and_start_up_lines_are_marked() -> None:
    log = GameLog()
    log.feed(
        "stderr",
        b"ERROR: Required extension VK_KHR_surface not found.\n"
        b"   at: initialize (drivers/vulkan/rendering_context_driver_vulkan.cpp:560)\n"
        b"ERROR: Invalid locale 'C'\n"
        b"ERROR: make_dir_recursive: Method failed. Returning: err\n"
        b"   At: core/os/dir_access.cpp:406.\n",
    )
    log.feed("stdout", b"Godot Engine v4.6.3.stable - https://godotengine.org\nmine\n")
    rows = [e.as_dict() for e in log.read(None, 10).entries]
    assert [(r["stream"], r["level"], r["text"], r.get("startup")) for r in rows] == [
        ("stderr", "error", "ERROR: Required extension VK_KHR_surface not found.", True),
        ("stderr", "error", "ERROR: Invalid locale 'C'", True),
        # The game's own failing make_dir_recursive is the game's: kept, not marked, and its
        # At: line is folded into it, never left alone as a print.
        ("stderr", "error", "ERROR: make_dir_recursive: Method failed. Returning: err", None),
        ("stdout", "print", "Godot Engine v4.6.3.stable - https://godotengine.org", True),
        ("stdout", "print", "mine", None),
    ]
    # Asking for errors, or waiting for one, is not answered by the engine's probes.
    errors = log.read(None, 10, "error").entries
    assert [e.text for e in errors] == ["ERROR: make_dir_recursive: Method failed. Returning: err"]
    assert log.has_new(2, "error") and not log.has_new(3, "error")
    assert not log.has_new(3, "warning")


def test_a_location_line_after_a_print_is_folded_too() -> None:
    log = GameLog()
    log.feed("stdout", b"plain\n   At: res://x.gd:3.\n")
    rows = [e.as_dict() for e in log.read(None, 10).entries]
    assert rows == [{"seq": 0, "stream": "stdout", "level": "print", "text": "plain"}]


def test_the_buffer_is_bounded_and_counts_what_fell_out() -> None:
    log = GameLog(max_lines=5)
    for i in range(12):
        log.feed("stdout", f"line {i}\n".encode())
    page = log.read(None, 100)
    assert [e.text for e in page.entries] == [f"line {i}" for i in range(7, 12)]
    assert page.dropped == 7 and page.next_seq == 12
    assert log.read(3, 100).dropped == 4  # lines 3..6 fell out after that cursor
    assert log.read(9, 100).dropped == 0
    assert decode_cursor(encode_cursor(page.next_seq)) == 12


def test_min_level_filters_without_losing_the_place() -> None:
    log = GameLog()
    log.feed("stdout", b"a\nb\n")
    log.feed("stderr", b"ERROR: bad\n")
    log.feed("stdout", b"c\n")
    page = log.read(None, 100, "error")
    assert [e.text for e in page.entries] == ["ERROR: bad"] and page.next_seq == 4
    one = log.read(None, 1)
    assert [e.text for e in one.entries] == ["a"] and one.next_seq == 1


def test_only_a_cursor_in_its_exact_form_is_ours() -> None:
    cursor = encode_cursor(61)
    assert decode_cursor(cursor) == 61
    # Base64 alone would forgive characters outside its alphabet and padding: a cursor is
    # taken only as written.
    for forged in (cursor + "!", "!" + cursor, cursor + "=", cursor + "==", "nonsense"):
        with pytest.raises(ValueError, match="invalid cursor"):
            decode_cursor(forged)


def test_a_source_is_scrubbed_and_never_leaves_res() -> None:
    """A game prints any ``At:`` line it likes: a location naming a private path is scrubbed,
    and one that leaves ``res://`` is no source at all."""
    log = GameLog(scrub=lambda s: s.replace("/srv/state", "<state>"))
    log.feed("stderr", b"ERROR: x\n   At: res://../../srv/state/blobs/x.gd:3.\n")
    log.feed("stderr", b"ERROR: y\n   at: f (res:///srv/state/y.gd:4)\n")
    log.feed("stderr", b"ERROR: v res://srv/state/v.gd:5\n")
    log.feed("stderr", b"ERROR: z res://levels/z.gd:5\n")
    log.feed("stderr", b"ERROR: w\n   At: res://ok/./w.gd:6.\n")
    entries = [e.as_dict() for e in log.read(None, 100).entries]
    assert [e.get("source") for e in entries] == [
        None,
        None,
        None,
        {"path": "res://levels/z.gd", "line": 5},
        None,
    ]
    assert "/srv/state" not in repr(entries)


def test_terminal_escapes_are_left_out_of_the_text() -> None:
    """print_rich colours its lines; the colour is nothing an agent can use."""
    log = GameLog()
    log.feed("stdout", b"\x1b[38;5;39mGodot\x1b[0m v4 - \x1b[4mhttps://godotengine.org\x1b[0m\n")
    log.feed("stdout", b"\x1b]0;title\x07\x1b[1m\x1b[31mbold red\x1b[0m [x] 50%\n")
    log.feed("stderr", b"\x1b[1;31mERROR:\x1b[0m boom\n")
    log.feed("stdout", b"\x1b[0m\n")  # nothing but an escape: no line
    entries = [e.as_dict() for e in log.read(None, 100).entries]
    assert [(e["text"], e["level"]) for e in entries] == [
        ("Godot v4 - https://godotengine.org", "print"),
        ("bold red [x] 50%", "print"),
        ("ERROR: boom", "error"),
    ]


RENDERER_FALLBACK = (
    b"ERROR: Required extension VK_KHR_surface not found.\n"
    b"   at: _initialize_instance_extensions (drivers/vulkan/rendering_context_driver_vulkan"
    b".cpp:487)\n"
    b'ERROR: Condition "err != OK" is true. Returning: err\n'
    b"   at: initialize (drivers/vulkan/rendering_context_driver_vulkan.cpp:928)\n"
    b"WARNING: Your video card drivers seem not to support the required Vulkan version, "
    b"switching to OpenGL 3.\n"
    b"     at: DisplayServerX11 (platform/linuxbsd/x11/display_server_x11.cpp:7046)\n"
)


def test_the_renderer_fallback_is_start_up_never_the_games_error() -> None:
    """Godot 4.6's Forward+ fallback without Vulkan, as it prints it here: three start-up
    lines. The same Condition line elsewhere is the game's error."""
    log = GameLog()
    log.feed("stderr", RENDERER_FALLBACK)
    log.feed("stderr", b'ERROR: Condition "err != OK" is true. Returning: err\n')
    entries = log.read(None, 100).entries
    assert [e.startup for e in entries] == [True, True, True, False]
    errors = log.read(None, 100, "error").entries
    assert [e.text for e in errors] == ['ERROR: Condition "err != OK" is true. Returning: err']
    assert log.tail(10, telling=True) == [errors[0].text]


def test_a_runs_reason_is_never_the_renderer_fallback() -> None:
    lines = RENDERER_FALLBACK.decode().splitlines()
    assert first_reason(lines) == ""
    assert first_reason([*lines, "ERROR: real trouble"]) == "ERROR: real trouble"


# What Godot 3.6.2's server build prints around an export's own message in the sandbox.
EDITOR36 = (
    "ERROR: VisualServer attempted to free a NULL RID.\n"
    "   at: free (servers/visual/visual_server_raster.cpp:69)\n"
    "ERROR: Cannot open X509CertificateMbedTLS file '/etc/ssl/certs/ca-certificates.crt'.\n"
    "   at: load (modules/mbedtls/crypto_mbedtls.cpp:169)\n"
    "ERROR: Invalid export preset name: Ghost.\n"
    "   at: _fs_changed (editor/editor_node.cpp:824)\n"
    + "ERROR: VisualServer attempted to free a NULL RID.\n"
    "   at: free (servers/visual/visual_server_raster.cpp:69)\n" * 3
)


def test_a_runs_reason_is_never_godot_3_6s_editor_noise() -> None:
    lines = EDITOR36.splitlines()
    assert first_reason(lines) == "ERROR: Invalid export preset name: Ghost."
    noise = [line for line in lines if "Ghost" not in line]
    assert first_reason(noise) == ""


def test_an_exports_log_tail_carries_no_terminal_escapes(tmp_path) -> None:
    """Godot 4 colours its export progress; the tail a client reads has none of it."""
    from godot_mcp.features.export.job import _read_tail

    log = tmp_path / "export.log"
    log.write_bytes(
        b"\x1b[90m[  0% ] \x1b[0msavepack\n\x1b[1;31mERROR:\x1b[0m No export template\n"
    )
    assert _read_tail(log) == "[  0% ] savepack\nERROR: No export template\n"
