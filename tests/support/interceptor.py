"""A game-side autoload that reads the server's commands before the bridge does.

Physics steps run before the frame's idle step, where the bridge reads, and at 240 ticks a
second there are several a frame: the interceptor answers the commands ``takes`` picks itself
(with ``answer``) and hands every other command on to the bridge's own inbox. Tests use it
to send the server replies the real bridge never would.
"""

from __future__ import annotations

_SCRIPT = """extends Node

var _pending = ""

func _ready():
	Engine.{ticks} = 240

func _physics_process(_delta):
	var tree = get_tree()
	var peer = tree.get("_peer")
	if peer == null or peer.get_status() != StreamPeerTCP.STATUS_CONNECTED:
		return
	var count = peer.get_available_bytes()
	if count > 0:
		_pending += peer.get_data(count)[1].get_string_from_utf8()
	while _pending.find("\\n") >= 0:
		var at = _pending.find("\\n")
		var line = _pending.substr(0, at)
		_pending = _pending.substr({rest})
		var cmd = {parse}
{before}		if {takes}:
			{answer}
		else:
			var inbox = tree.get("_inbox")
			inbox.append_array((line + "\\n").{utf8}())
			tree.set("_inbox", inbox)
"""


def interceptor(major: int, takes: str, answer: str, before: str = "") -> str:
    """The interceptor's script for engine line ``major``: ``takes`` is the GDScript condition
    on ``cmd`` (a parsed command, or whatever the line parsed as) that it answers itself,
    ``answer`` the statement that answers it, ``before`` whole lines run first for each
    command. The caller appends any functions ``answer`` calls."""
    four = major >= 4
    return _SCRIPT.format(
        ticks="physics_ticks_per_second" if four else "iterations_per_second",
        rest="at + 1" if four else "at + 1, -1",
        parse="JSON.parse_string(line)" if four else "JSON.parse(line).result",
        utf8="to_utf8_buffer" if four else "to_utf8",
        before=before,
        takes=takes,
        answer=answer,
    )
