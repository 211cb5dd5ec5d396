"""Every spelling of a private path is scrubbed: normalised (``//``, ``/./``, ``x/../``) and
percent-encoded (wholly or in part, either case, once or twice); the text around it is kept as
it was, and no line makes the scrubber slow."""

from __future__ import annotations

import re
import time
import urllib.parse
from pathlib import Path

import pytest

from godot_mcp.engine.process.redact import Scrubber, printable, private_roots

STATE = "/srv/godot/state"
SCRATCH = f"{STATE}/scratch/games/123-456"


def scrubber() -> Scrubber:
    return Scrubber(
        [(SCRATCH, "<tmp>"), *private_roots(Path(STATE)), ("/home/u/proj/", "res://")],
        secrets=["s3cr3t/Val+ue"],
    )


def encode_all(text: str, lower: bool = False) -> str:
    out = "".join(f"%{b:02X}" for b in text.encode())
    return out.lower() if lower else out


SPELLINGS = {
    # normalised spellings
    "double-slash": ("see //srv//godot///state/x", "see /<state>/x"),
    "dot-segments": ("see /srv/./godot/./state/./x", "see <state>/./x"),
    "dotdot-segment": ("see /srv/elsewhere/../godot/state", "see <state>"),
    "dotdot-twice": ("see /srv/a/../b/../godot/c/../state/blobs", "see <state>/blobs"),
    "dotdot-after-a-name-with-spaces": ("/srv/a dir/../godot/state", "<state>"),
    "leading-dotdot": ("see /../srv/godot/state, ok", "see <state>, ok"),
    "leading-dot": ("see /./srv/godot/state", "see <state>"),
    "all-at-once": ("x=/srv//./godot/tmp/..//state/./scratch", "x=<state>/./scratch"),
    # percent-encoded spellings
    "slashes-encoded": ("%2Fsrv%2Fgodot%2Fstate%2Fblobs", "<state>%2Fblobs"),
    "slashes-lowercase": ("%2fsrv%2fgodot%2fstate%2fblobs", "<state>%2fblobs"),
    "mixed-case": ("%2fsrv%2Fgodot%2fstate", "<state>"),
    "some-chars-encoded": ("/s%72v/godot%2Fst%61te/x", "<state>/x"),
    "every-char-encoded": (encode_all(STATE) + "%2Fx", "<state>%2Fx"),
    "every-char-lowercase": (encode_all(STATE, lower=True) + " ok", "<state> ok"),
    "encoded-twice": ("%252Fsrv%252Fgodot%252Fstate%252F", "<state>%252F"),
    "encoded-and-dotted": ("%2Fsrv%2F.%2Fgodot%2F%2Fstate", "<state>"),
    "encoded-dotdot": ("%2Fsrv%2Fx%2F%2E%2E%2Fgodot%2Fstate", "<state>"),
    "in-a-url": ("file://%2Fsrv%2Fgodot%2Fstate?x=1", "file://<state>?x=1"),
    "scratch-wins": (SCRATCH.replace("/", "%2F") + "%2Fuser", "<tmp>%2Fuser"),
    "scratch-dotted": (SCRATCH.replace("/", "/./") + "/user", "<tmp>/user"),
    "parent": ("%2Fsrv%2Fgodot%2Fother", "<private>%2Fother"),
    "project": ("%2Fhome%2Fu%2Fproj%2Fmain.gd", "res://main.gd"),
    "secret-encoded": ("token=s3cr3t%2FVal%2Bue;", "token=<secret>;"),
}


@pytest.mark.parametrize("case", list(SPELLINGS))
def test_every_spelling_of_a_private_path_is_scrubbed(case):
    given, expected = SPELLINGS[case]
    assert scrubber()(given) == expected


def decoded(text: str) -> str:
    """What a client could make of a text: percent-decoded (twice), then normalised."""
    text = urllib.parse.unquote(urllib.parse.unquote(text))
    for _ in range(8):
        text = re.sub(r"/\.(?=/)|/(?!\.\.)[^/\s]+/\.\.(?=/)|^/\.\.(?=/)", "", text)
        text = re.sub(r"//+", "/", text)
    return text


def test_no_spelling_decodes_to_a_private_path():
    scrub = scrubber()
    for given, _ in SPELLINGS.values():
        out = decoded(scrub(given))
        for private in (STATE, "/srv/godot", "/home/u/proj", "s3cr3t"):
            assert not re.search(re.escape(private) + r"(?![A-Za-z0-9._-])", out), (given, out)


@pytest.mark.parametrize(
    "text",
    [
        "res://main.tscn and https://godotengine.org/x//y",
        "progress: 50% done, 100%% sure, %zz and %2",
        "/srv/godotx/state is public; so are /srv/godot2 and /srv/godot.old/state",
        "/srv/godot-other/state %2Fsrv%2Fgodotx%2Fstate",
        "a%20b%2Fc/./d//e/../f",
        "",
    ],
)
def test_text_that_names_no_private_path_is_left_as_it_was(text):
    assert scrubber()(text) == text


def test_only_the_path_is_replaced_the_rest_is_never_decoded():
    scrub = scrubber()
    given = "name%20with%20spaces=%2Fsrv%2Fgodot%2Fstate%2Fx%3Fy; 100%25 /./ //"
    assert scrub(given) == "name%20with%20spaces=<state>%2Fx%3Fy; 100%25 /./ //"
    # An encoded character that continues a name: a different dir (stateA), not the state dir.
    assert scrub("%2Fsrv%2Fgodot%2Fstate%41") == "<private>%2Fstate%41"
    assert scrub("/srv/godot/state%2D2") == "<private>/state%2D2"


def test_a_path_with_non_ascii_characters_is_found_encoded():
    scrub = Scrubber([("/srv/jeux/état", "<state>")], secrets=[])
    assert scrub("/srv/jeux/%C3%A9tat/x") == "<state>/x"
    assert scrub("%2fsrv%2fjeux%2f%c3%a9tat") == "<state>"
    assert scrub("/srv/jeux/./état") == "<state>"


@pytest.mark.parametrize(
    "line",
    [
        "/" * 10_000,
        "%2F" * 3_333,
        "%252F" * 2_000,
        "/." * 5_000,
        "/a/.." * 2_000,
        "%41/" * 2_500,
        "/srv/" + "x" * 10_000 + "/./",
        "/srv/godot/" * 900 + "%2F",
        "%2Fsrv%2F" * 1_000,
    ],
)
def test_no_line_makes_the_scrubber_slow(line):
    scrub = scrubber()
    scrub("%41")  # compiled once
    began = time.perf_counter()
    scrub(line)
    assert time.perf_counter() - began < 1.0  # linear: tens of ms on a 10 kB line


def test_a_plain_line_needs_the_plain_pattern_only():
    """A line with no odd spelling is matched by the plain pattern alone: the costly pattern of
    the odd spellings is never built (what made plain lines cheap; the machine is too noisy to
    time it here)."""
    scrub = scrubber()
    line = "Godot Engine v3.2.3.stable - https://godotengine.org res://x.gd:12 and words" * 4
    for _ in range(50):
        assert scrub(line) == line
    assert scrub._re_any is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("DOTDOT2 /tmp/a/b/../../gstate/blobs", "DOTDOT2 <state>/blobs"),
        ("SLASHES /tmp//////////gstate/blobs x", "SLASHES <state>/blobs x"),
        ("at /tmp/a/b/c/d/e/../../../../../gstate/store.db.", "at <state>/store.db."),
        ("%2Ftmp%2Fa%2Fb%2F..%2F..%2Fgstate%2Fx", "<state>/x"),
        ("/tmp/./././././././././././././gstate/x", "<state>/x"),
        ("/tmp/a/../gstate2/x and /tmp//x", "/tmp/a/../gstate2/x and /tmp//x"),
    ],
)
def test_any_depth_of_dotdot_and_any_run_of_slashes_is_scrubbed(given: str, expected: str):
    """A state dir whose parent is public (/tmp): no <private> placeholder covers the parent,
    so every spelling must normalise to the state dir itself to be caught."""
    scrub = Scrubber(private_roots(Path("/tmp/gstate")), secrets=[])
    assert scrub(given) == expected


def test_a_home_dir_is_said_as_a_tilde_but_root_s_home_names_no_one() -> None:
    """A root server's home is /root, where every node path of a scene begins: a game's
    "no node at /root/Main/X" stays as it is; anyone else's home is said as ~."""
    line = "no node at /root/Main/X; saved /home/ann/x.png"
    assert Scrubber.for_run([], home="/home/ann")(line) == "no node at /root/Main/X; saved ~/x.png"
    assert Scrubber.for_run([], home="/root")(line) == line
    assert Scrubber.for_run([], home="/root/")(line) == line


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("forged error \x1b]0;pwned\x07\x1b[2J", "forged error "),  # a title change, a clear
        ("\x1b[31mtick\x1b[0m", "tick"),
        ("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # a hyperlink's OSC 8
        ("two\nlines\tand a tab", "two\nlines\tand a tab"),  # a value's own lines are data
        ("bell\x07 nul\x00 cr\r del\x7f c1\x9b", "bell nul cr del c1"),
        ("\u202eevil\u2066x\u200b", "evilx"),  # direction marks and zero-width characters
        ("a\u061cb\u2060c\ufeffd\u180ee\U000e0001f\u2028g\u2029h", "abcdefgh"),  # invisible
        ("plain", "plain"),
    ],
)
def test_a_game_text_loses_escapes_controls_and_direction_marks(given: str, expected: str):
    assert printable(given) == expected


def test_a_game_text_and_a_game_value_are_printable_and_scrubbed():
    scrub = Scrubber([("/srv/state", "<state>")], secrets=[])
    assert scrub.game("\x1b[2J/srv/state/x\x07") == "<state>/x"
    # an escape between the parts of a path hides nothing: it is removed before scrubbing
    assert scrub.game("/srv/\x1b[0mstate/y") == "<state>/y"
    value = {"k\x1b[1m": ["/srv/state", 1, 2.5, None, True, {"n": "a\nb\x1b]0;t\x07"}]}
    assert scrub.game_json(value) == {"k": ["<state>", 1, 2.5, None, True, {"n": "a\nb"}]}
