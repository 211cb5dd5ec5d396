"""The environment policy and secret scrubbing (pure logic, on top of the real-game test in
tests/runtime/test_game_log.py)."""

from __future__ import annotations

from godot_mcp.engine.process.environment import for_game, for_sandbox, secret_values
from godot_mcp.engine.process.redact import Scrubber

SERVER = {
    "PATH": "/opt/godot/bin:/usr/bin",
    "HOME": "/home/ana",
    "USER": "ana",
    "PWD": "/srv/state",
    "OLDPWD": "/srv",
    "LANG": "de_DE.UTF-8",
    "LC_TIME": "en_GB.UTF-8",
    "LC_API_TOKEN": "sekrit-lc-token",
    "DISPLAY": ":0",
    "XAUTHORITY": "/home/ana/.Xauthority",
    "WAYLAND_DISPLAY": "wayland-0",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "XDG_DATA_HOME": "/home/ana/.local/share",
    "PULSE_SERVER": "unix:/run/user/1000/pulse/native",
    "MESA_GL_VERSION_OVERRIDE": "4.5",
    "__GLX_VENDOR_LIBRARY_NAME": "nvidia",
    "LD_LIBRARY_PATH": "/opt/godot/lib",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
    "GODOT_MCP_DATABASE_URL": "postgresql://mcp:p%40ss-word9@db.internal/mcp",
    "HTTPS_PROXY": "http://proxyuser:proxy-pass-7@proxy:3128",
    "GITHUB_TOKEN": "ghp_0123456789abcdef",
    "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock",
    "GODOT_MCP_SECRET": "bridge-secret-value",
    "MY_APP_SETTING": "harmless",
    "DEBUG": "1",
}


def test_a_game_gets_what_godot_needs_and_nothing_else() -> None:
    assert for_game(SERVER) == {
        "PATH": "/opt/godot/bin:/usr/bin",
        "HOME": "/home/ana",
        "USER": "ana",
        "LANG": "de_DE.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "DISPLAY": ":0",
        "XAUTHORITY": "/home/ana/.Xauthority",
        "WAYLAND_DISPLAY": "wayland-0",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "XDG_DATA_HOME": "/home/ana/.local/share",
        "PULSE_SERVER": "unix:/run/user/1000/pulse/native",
        "MESA_GL_VERSION_OVERRIDE": "4.5",
        "__GLX_VENDOR_LIBRARY_NAME": "nvidia",
        "LD_LIBRARY_PATH": "/opt/godot/lib",
    }
    assert for_game({})["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def test_an_export_or_check_gets_the_locale_and_a_plain_path() -> None:
    assert for_sandbox(SERVER) == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "de_DE.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
    }


def test_secret_values_include_passwords_inside_urls() -> None:
    found = secret_values(SERVER)
    for value in (
        "wJalrXUtnFEMI/K7MDENG",
        "postgresql://mcp:p%40ss-word9@db.internal/mcp",
        "p%40ss-word9",
        "p@ss-word9",
        "proxy-pass-7",
        "ghp_0123456789abcdef",
        "sekrit-lc-token",
        "bridge-secret-value",
        "/tmp/ssh-agent.sock",
    ):
        assert value in found, value
    assert "AKIAEXAMPLE" in found  # an access key's id: named like a secret, scrubbed too
    assert "harmless" not in found and "1" not in found and "/home/ana/.Xauthority" not in found
    assert found == sorted(found, key=len, reverse=True)


def test_every_scrubber_removes_the_servers_secrets(monkeypatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "k3y-value-42")
    monkeypatch.setenv("SOME_DATABASE_URL", "postgresql://u:hunter2hunter2@h/db")
    scrub = Scrubber([("/srv/state", "<state>")])
    text = "key k3y-value-42 at /srv/state/x, db postgresql://u:hunter2hunter2@h/db; hunter2hunter2"
    assert scrub(text) == "key <secret> at <state>/x, db <secret>; <secret>"
    assert scrub.extended([("/srv", "<srv>")])("k3y-value-42 /srv/y") == "<secret> <srv>/y"
    assert Scrubber([], secrets=[])("k3y-value-42") == "k3y-value-42"
