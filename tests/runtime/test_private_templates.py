"""A custom export template among the server's own files (a blob of its store, anything in or
beside its state dir, its package) is refused however it is spelled, with no path in the
message: no preset can export the server's bytes back."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.redact import private_roots
from godot_mcp.engine.project.presets import Preset, expected_outputs, find_preset, project_name
from godot_mcp.engine.project.presets import read_presets as read_project_presets
from godot_mcp.features.export.job import ExportRunner, ExportSetupError
from godot_mcp.features.export.templates import custom_template_refusal, open_custom_template
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, NewArtifact
from tests.godot.export_fixtures import make_project
from tests.runtime.test_custom_templates import require_binaries, set_template
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio]

OWN_FILES = (
    "is one of the server's own files (in its state dir, beside it or in its package); "
    "exports never read them"
)


def refusal(preset: str, kind: str = "release") -> str:
    return f"preset {preset!r}: its custom_template/{kind} {OWN_FILES}"


def store_a_blob(state: Path, project: Path, source: Path) -> Path:
    """Register ``source``'s bytes as an artifact of ``project``; the blob file that holds them."""
    store = ArtifactStore(state)
    try:
        ps = store.projects.observe(project)
        info = store.register(
            Caller("local", None, None, ps.id),
            ps.generation,
            NewArtifact("application/octet-stream", source, name="game.x86_64"),
        )
        blob = store.layout.blob_dir / info.sha256[:2] / info.sha256[2:4] / info.sha256
    finally:
        store.close()
    assert blob.is_file() and blob.read_bytes() == source.read_bytes()
    return blob


# --- the rule, on real files (no engine) ------------------------------------------------------


def _elf() -> Path:
    found = shutil.which("true")
    assert found
    return Path(found)


def _preset(path: str, platform: str = "Linux/X11") -> Preset:
    return Preset("P", platform, "build/game", custom_release=path, custom_debug=path)


def test_a_template_in_or_beside_the_state_dir_is_refused_however_spelled(tmp_path):
    state = tmp_path / "srv" / "state"
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.godot").write_text("config_version=4\n")
    blob = store_a_blob(state, project, _elf())
    rel = blob.relative_to(state)
    beside = state.parent / "other-server.x86_64"
    shutil.copyfile(_elf(), beside)
    (project / "tmpl").symlink_to(blob)
    (tmp_path / "state-link").symlink_to(state)
    (tmp_path / "relative-link").symlink_to(os.path.relpath(blob, tmp_path))
    private = private_roots(state)
    spellings = [
        str(blob),
        f"{project}/../srv/state/{rel}",
        f"{state}//./{rel}",
        f"{state}/scratch/../{rel}",
        f"  {blob}\t",
        str(project / "tmpl"),
        f"{tmp_path}/state-link/{rel}",
        str(tmp_path / "relative-link"),
        str(beside),
        str(state / "db.sqlite3"),  # not a template at all: refused for where it lies first
        str(state),
        str(Path(__file__).resolve().parents[2] / "godot_mcp" / "__init__.py"),
    ]
    for value in spellings:
        for kind in ("release", "debug"):
            said = custom_template_refusal({}, _preset(value), kind, private)
            assert said == f"preset 'P': its custom_template/{kind} {OWN_FILES}", (value, said)
            for secret in (str(tmp_path), "blobs", blob.name, "srv", "state"):
                assert secret not in said.replace("state dir", ""), (value, said)
    # The same file outside the server's dirs is a template like any other.
    elsewhere = tmp_path / "opt" / "template.x86_64"
    elsewhere.parent.mkdir()
    shutil.copyfile(blob, elsewhere)
    assert custom_template_refusal({}, _preset(str(elsewhere)), "release", private) is None
    fd = open_custom_template(_preset(str(elsewhere)), "release", private)
    assert fd is not None
    os.close(fd)
    # With no private roots given, the blob is just a file (the server always gives them).
    assert custom_template_refusal({}, _preset(str(blob)), "release") is None


def test_the_state_dir_named_through_a_link_is_private_by_every_name(tmp_path):
    """A state dir given through a link (``--state-dir /srv/link``): its spelling is one of
    the private roots, and the file reached through either name is refused."""
    real = tmp_path / "disk" / "state"
    real.mkdir(parents=True)
    link = tmp_path / "srv"
    link.mkdir()
    (link / "state").symlink_to(real)
    template = real / "kept.x86_64"
    shutil.copyfile(_elf(), template)
    private = private_roots(Path(os.path.realpath(link / "state")), str(link / "state"))
    for value in (str(template), str(link / "state" / "kept.x86_64")):
        assert custom_template_refusal({}, _preset(value), "release", private) == (
            f"preset 'P': its custom_template/release {OWN_FILES}"
        )


# --- through a real server, on both engines ----------------------------------------------------


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[tuple[ServedProject, Path]]:
    base = tmp_path_factory.mktemp(f"private-templates-{engine.name}")
    project = make_project(base / "project", engine.major)
    state = base / "server" / "state"
    release = shutil.which(engine.release_template)
    assert release, engine.release_template
    blob = store_a_blob(state, project, Path(release))  # a real export template, as a blob
    (project / "template.x86_64").symlink_to(blob)
    (base / "outside").mkdir()
    (base / "outside" / "state").symlink_to(state)
    shutil.copyfile(release, state.parent / "beside.x86_64")
    server = serve_project(project, state)
    yield server, blob
    server.http.stop()


CASES = {
    "blob": "{state}/{rel}",
    "dotdot": "{project}/../server/state/{rel}",
    "dot-and-slashes": "{state}/.//scratch/..//{rel}",
    "link-in-project": "{project}/template.x86_64",
    "link-to-the-state-dir": "{base}/outside/state/{rel}",
    "beside-the-state-dir": "{base}/server/beside.x86_64",
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_refuses_its_own_blob_as_a_custom_template(served, transport, case):
    require_binaries()
    server, blob = served
    project, state = server.project, server.state_dir
    written = CASES[case].format(
        state=state, project=project, base=project.parent, rel=blob.relative_to(state)
    )
    assert os.path.samefile(written, blob) or case == "beside-the-state-dir"
    original = (project / "export_presets.cfg").read_text()
    set_template(project, "release", written)
    try:
        with anyio.fail_after(60):
            async with server.connect(transport) as c:
                r = await c.call_tool("project.export", {"preset": "Linux/X11", "kind": "release"})
    finally:
        (project / "export_presets.cfg").write_text(original)
    body = r.structured_content
    assert body["outcome"] == "invalid_argument", body
    assert body["message"] == refusal("Linux/X11"), body
    for private in (str(project.parent), "blobs", blob.name, "/tmp", "server/"):
        assert private not in body["message"], body
    assert list((state / "exports").iterdir()) == []  # refused before anything was made


def test_the_export_runner_refuses_a_private_template_on_its_own(served, engine, tmp_path):
    """The runner checks the descriptor it opens itself (a link swapped after the server's
    first look changes nothing)."""
    require_binaries()
    server, blob = served
    copy = make_project(tmp_path / "project", engine.major)
    (tmp_path / "t").symlink_to(blob)  # outside the project: a link in it would be refused too
    set_template(copy, "debug", str(tmp_path / "t"))
    runner = ExportRunner(
        shutil.which(engine.headless) or engine.headless,
        tmp_path / "work",
        profile=engine.profile,
        private=tuple(private_roots(server.state_dir)),
    )
    preset = find_preset(read_project_presets(copy), "Linux/X11")
    expected = expected_outputs(project_name(copy), preset, "debug")
    with pytest.raises(ExportSetupError) as caught:
        runner.prepare(copy, preset, "debug", "e1", expected)
    assert str(caught.value) == refusal("Linux/X11", "debug")
    assert not (tmp_path / "work" / "e1").exists()
