"""The engines' names of keys, by key code: a project's input map names its keys by code, and
``runtime.input.send`` takes them by name (the bridges look a name up with the engine's own
``OS.find_scancode_from_string`` / ``OS.find_keycode_from_string``).

Godot 3 and Godot 4 number keys differently. Both give a printable key its character's code
(the upper-case letter: ``A`` is 65), but a special key is ``SPKEY`` (``1 << 24``) plus an
offset on Godot 3 and ``Key::SPECIAL`` (``1 << 22``) plus another offset on Godot 4, and some
names differ (Godot 3's ``Control``, ``BackSpace`` are Godot 4's ``Ctrl``, ``Backspace``).
Godot 3 also names the Latin-1 keys; Godot 4 only ``Yen`` and ``Section`` of them.

A project's file says which numbering its events use: Godot 3 writes ``scancode`` (and, from
3.3, ``physical_scancode``), Godot 4 ``keycode``, ``physical_keycode`` and (4.2+)
``key_label``, so :data:`SCANCODES` and :data:`KEYCODES` are picked by those names, never by
the engine that runs. Each table is every code whose name the engine gives back as the same
code (``find(get_string(code)) == code``), dumped from Godot 3.2.3 and 3.6.2 (the same
table) and Godot 4.6.3; ``tests/godot/test_input_map.py`` compares them with the engine on
every lane.
"""

from __future__ import annotations

__all__ = ["KEYCODES", "SCANCODES"]


def _table(base: int, text: str) -> dict[int, str]:
    """``"1 Escape, 2 Tab, …"`` as ``{base + 1: "Escape", …}``."""
    out = {}
    for item in text.split(","):
        code, _, name = item.strip().partition(" ")
        if code:
            out[base + int(code)] = name
    return out


# The printable keys both name alike: digits and letters by themselves, the rest by name.
_PRINTABLE = {c: chr(c) for c in [*range(48, 58), *range(65, 91)]} | _table(
    0,
    """
    32 Space, 33 Exclam, 34 QuoteDbl, 35 NumberSign, 36 Dollar, 37 Percent, 38 Ampersand,
    39 Apostrophe, 40 ParenLeft, 41 ParenRight, 42 Asterisk, 43 Plus, 44 Comma, 45 Minus,
    46 Period, 47 Slash, 58 Colon, 59 Semicolon, 60 Less, 61 Equal, 62 Greater, 63 Question,
    64 At, 91 BracketLeft, 92 BackSlash, 93 BracketRight, 94 AsciiCircum, 95 UnderScore,
    96 QuoteLeft, 123 BraceLeft, 124 Bar, 125 BraceRight, 126 AsciiTilde, 165 Yen, 167 Section,
""",
)

SCANCODES: dict[int, str] = (
    _PRINTABLE
    | _table(
        0,
        """
    160 NoBreakSpace, 161 ExclamDown, 162 Cent, 163 Sterling, 164 Currency, 166 BrokenBar,
    168 Diaeresis, 169 Copyright, 170 Ordfeminine, 171 GuillemotLeft, 172 NotSign, 173 Hyphen,
    174 Registered, 175 Macron, 176 Degree, 177 PlusMinus, 178 TwoSuperior, 179 ThreeSuperior,
    180 Acute, 181 Mu, 182 Paragraph, 183 PeriodCentered, 184 Cedilla, 185 OneSuperior,
    186 Masculine, 187 GuillemotRight, 188 OneQuarter, 189 OneHalf, 190 ThreeQuarters,
    191 QuestionDown, 192 Agrave, 193 Aacute, 194 AcircumFlex, 195 Atilde, 196 Adiaeresis,
    197 Aring, 198 Ae, 199 Ccedilla, 200 Egrave, 201 Eacute, 202 Ecircumflex, 203 Ediaeresis,
    204 Igrave, 205 Iacute, 206 Icircumflex, 207 Idiaeresis, 208 Eth, 209 Ntilde, 210 Ograve,
    211 Oacute, 212 Ocircumflex, 213 Otilde, 214 Odiaeresis, 215 Multiply, 216 Ooblique,
    217 Ugrave, 218 Uacute, 219 Ucircumflex, 220 Udiaeresis, 221 Yacute, 222 Thorn, 223 Ssharp,
    247 Division, 255 Ydiaeresis,
""",
    )
    | _table(
        1 << 24,
        """
    1 Escape, 2 Tab, 3 BackTab, 4 BackSpace, 5 Enter, 6 Kp Enter, 7 Insert, 8 Delete, 9 Pause,
    10 Print, 11 SysReq, 12 Clear, 13 Home, 14 End, 15 Left, 16 Up, 17 Right, 18 Down,
    19 PageUp, 20 PageDown, 21 Shift, 22 Control, 23 Meta, 24 Alt, 25 CapsLock, 26 NumLock,
    27 ScrollLock, 28 F1, 29 F2, 30 F3, 31 F4, 32 F5, 33 F6, 34 F7, 35 F8, 36 F9, 37 F10,
    38 F11, 39 F12, 40 F13, 41 F14, 42 F15, 43 F16, 44 Super L, 45 Super R, 46 Menu,
    47 Hyper L, 48 Hyper R, 49 Help, 50 Direction L, 51 Direction R, 64 Back, 65 Forward,
    66 Stop, 67 Refresh, 68 VolumeDown, 69 VolumeMute, 70 VolumeUp, 71 BassBoost, 72 BassUp,
    73 BassDown, 74 TrebleUp, 75 TrebleDown, 76 MediaPlay, 77 MediaStop, 78 MediaPrevious,
    79 MediaNext, 80 MediaRecord, 81 HomePage, 82 Favorites, 83 Search, 84 StandBy,
    86 LaunchMail, 87 LaunchMedia, 88 Launch0, 89 Launch1, 90 Launch2, 91 Launch3, 92 Launch4,
    93 Launch5, 94 Launch6, 95 Launch7, 96 Launch8, 97 Launch9, 98 LaunchA, 99 LaunchB,
    100 LaunchC, 101 LaunchD, 102 LaunchE, 103 LaunchF, 129 Kp Multiply, 130 Kp Divide,
    131 Kp Subtract, 132 Kp Period, 133 Kp Add, 134 Kp 0, 135 Kp 1, 136 Kp 2, 137 Kp 3,
    138 Kp 4, 139 Kp 5, 140 Kp 6, 141 Kp 7, 142 Kp 8, 143 Kp 9,
""",
    )
)
"""Godot 3's scancodes and their names (``OS.get_scancode_string``)."""

KEYCODES: dict[int, str] = _PRINTABLE | _table(
    1 << 22,
    """
    1 Escape, 2 Tab, 3 Backtab, 4 Backspace, 5 Enter, 6 Kp Enter, 7 Insert, 8 Delete, 9 Pause,
    10 Print, 11 SysReq, 12 Clear, 13 Home, 14 End, 15 Left, 16 Up, 17 Right, 18 Down,
    19 PageUp, 20 PageDown, 21 Shift, 22 Ctrl, 23 Meta, 24 Alt, 25 CapsLock, 26 NumLock,
    27 ScrollLock, 28 F1, 29 F2, 30 F3, 31 F4, 32 F5, 33 F6, 34 F7, 35 F8, 36 F9, 37 F10,
    38 F11, 39 F12, 40 F13, 41 F14, 42 F15, 43 F16, 44 F17, 45 F18, 46 F19, 47 F20, 48 F21,
    49 F22, 50 F23, 51 F24, 52 F25, 53 F26, 54 F27, 55 F28, 56 F29, 57 F30, 58 F31, 59 F32,
    60 F33, 61 F34, 62 F35, 66 Menu, 67 Hyper, 69 Help, 72 Back, 73 Forward, 74 Stop,
    75 Refresh, 76 VolumeDown, 77 VolumeMute, 78 VolumeUp, 84 MediaPlay, 85 MediaStop,
    86 MediaPrevious, 87 MediaNext, 88 MediaRecord, 89 HomePage, 90 Favorites, 91 Search,
    92 StandBy, 93 OpenURL, 94 LaunchMail, 95 LaunchMedia, 96 Launch0, 97 Launch1, 98 Launch2,
    99 Launch3, 100 Launch4, 101 Launch5, 102 Launch6, 103 Launch7, 104 Launch8, 105 Launch9,
    106 LaunchA, 107 LaunchB, 108 LaunchC, 109 LaunchD, 110 LaunchE, 111 LaunchF, 112 Globe,
    113 On-screen keyboard, 114 JIS Eisu, 115 JIS Kana, 129 Kp Multiply, 130 Kp Divide,
    131 Kp Subtract, 132 Kp Period, 133 Kp Add, 134 Kp 0, 135 Kp 1, 136 Kp 2, 137 Kp 3,
    138 Kp 4, 139 Kp 5, 140 Kp 6, 141 Kp 7, 142 Kp 8, 143 Kp 9,
""",
)
"""Godot 4's keycodes and their names (``OS.get_keycode_string``)."""
