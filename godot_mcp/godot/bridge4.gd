extends SceneTree
# godot-mcp bridge for Godot 4.x: the same protocol as bridge3.gd, written against the Godot 4 API
# (change_scene_to_file, RenderingServer.frame_post_draw, Viewport.get_texture().get_image() with
# no flip, DisplayServer "headless", Engine.max_fps, StreamPeerTCP.poll, OS.get_cmdline_user_args).
# NOT TESTED: no Godot 4 can be installed on the machine this was written on; bridge3.gd is the
# version exercised by the test suite. Keep the two in step.
# Run as `--script /abs/bridge4.gd -- --mcp-port=N [--mcp-scene=res://x.tscn]`; the secret comes
# from the GODOT_MCP_SECRET environment variable.

const CONNECT_TIMEOUT_MS := 10000
const SECRET_ENV := "GODOT_MCP_SECRET"

var _peer := StreamPeerTCP.new()
var _port := 0
var _scene := ""
var _phase := "connecting"  # connecting, loading, serving, closing
var _started_ms := 0
var _inbox := PackedByteArray()
var _headless := false
var _load_error := ""
var _load_frames := 0
var _job := {}


func _initialize() -> void:
	Engine.max_fps = 60
	_headless = DisplayServer.get_name() == "headless"
	for arg in OS.get_cmdline_user_args():
		if arg.begins_with("--mcp-port="):
			_port = int(arg.substr(11))
		elif arg.begins_with("--mcp-scene="):
			_scene = arg.substr(12)
	if _port <= 0:
		printerr("godot-mcp bridge: missing --mcp-port")
		quit(2)
		return
	if _scene == "":
		_scene = str(ProjectSettings.get_setting("application/run/main_scene", ""))
	_started_ms = Time.get_ticks_msec()
	_peer.connect_to_host("127.0.0.1", _port)


func _process(_delta: float) -> bool:
	if _phase == "closing":
		return false
	_peer.poll()
	var status := _peer.get_status()
	if _phase == "connecting":
		if status == StreamPeerTCP.STATUS_CONNECTED:
			_send({
				"type": "hello",
				"secret": OS.get_environment(SECRET_ENV),
				"engine": str(Engine.get_version_info().get("string", "")),
				"os": OS.get_name(),
				"headless": _headless,
			})
			_start_loading()
		elif status == StreamPeerTCP.STATUS_ERROR or Time.get_ticks_msec() - _started_ms > CONNECT_TIMEOUT_MS:
			printerr("godot-mcp bridge: could not connect to the server")
			_close(3)
		return false
	if status != StreamPeerTCP.STATUS_CONNECTED:
		printerr("godot-mcp bridge: the server closed the connection")
		_close(0)
		return false
	if _phase == "loading":
		_load_frames += 1
		if current_scene != null or _load_frames > 2:
			_phase = "serving"
			_send_ready()
		return false
	_read_commands()
	return false


func _start_loading() -> void:
	_phase = "loading"
	if _scene == "":
		_load_error = "the project has no main scene"
	elif not ResourceLoader.exists(_scene):
		_load_error = "scene %s does not exist" % _scene
	else:
		var err := change_scene_to_file(_scene)
		if err != OK:
			_load_error = "scene %s failed to load (error %d)" % [_scene, err]
	if _load_error != "":
		_phase = "serving"
		_send_ready()


func _send_ready() -> void:
	var loaded := _load_error == "" and current_scene != null
	if _load_error == "" and not loaded:
		_load_error = "scene %s failed to load" % _scene
	var size := root.size
	_send({
		"type": "ready",
		"scene": _scene,
		"loaded": loaded,
		"error": _load_error,
		"width": size.x,
		"height": size.y,
	})


func _read_commands() -> void:
	var available := _peer.get_available_bytes()
	if available > 0:
		var got: Array = _peer.get_data(available)
		if got[0] == OK:
			_inbox.append_array(got[1])
	while true:
		var newline := _inbox.find(10)
		if newline < 0:
			return
		var line := _inbox.slice(0, newline).get_string_from_utf8()
		_inbox = _inbox.slice(newline + 1)
		if line.strip_edges() != "":
			_handle(line)


func _handle(line: String) -> void:
	var parsed = JSON.parse_string(line)
	if typeof(parsed) != TYPE_DICTIONARY:
		_send({"id": null, "ok": false, "error": "invalid_argument", "message": "bad command line"})
		return
	var cmd: Dictionary = parsed
	var id = cmd.get("id")
	var name := str(cmd.get("cmd", ""))
	if name == "quit":
		_send({"id": id, "ok": true})
		_close(0)
	elif name == "ping":
		_send({"id": id, "ok": true, "fps": Engine.get_frames_per_second()})
	elif name == "screenshot" or name == "record":
		_begin_capture(id, name, cmd)
	else:
		_send({"id": id, "ok": false, "error": "invalid_argument", "message": "unknown command"})


func _begin_capture(id, name: String, cmd: Dictionary) -> void:
	if _headless:
		_send({"id": id, "ok": false, "error": "unavailable",
			"message": "captures need a windowed session; this one is headless"})
		return
	if not _job.is_empty():
		_send({"id": id, "ok": false, "error": "failed", "message": "a capture is already running"})
		return
	var paths: Array = []
	if name == "screenshot":
		paths = [str(cmd.get("path", ""))]
	else:
		paths = cmd.get("paths", [])
	for p in paths:
		if not str(p).is_absolute_path():
			_send({"id": id, "ok": false, "error": "invalid_argument", "message": "capture paths must be absolute"})
			return
	var fps := float(cmd.get("fps", 60))
	if paths.is_empty() or fps <= 0.0:
		_send({"id": id, "ok": false, "error": "invalid_argument", "message": "nothing to capture"})
		return
	_job = {
		"id": id,
		"paths": paths,
		"interval_us": int(1000000.0 / fps),
		"next_us": 0,
		"frames": [],
		"start_us": Time.get_ticks_usec(),
	}
	RenderingServer.frame_post_draw.connect(_on_frame_post_draw)


func _on_frame_post_draw() -> void:
	if _job.is_empty():
		return
	var t0 := Time.get_ticks_usec()
	if t0 < _job["next_us"]:
		return
	var index: int = _job["frames"].size()
	var image: Image = root.get_texture().get_image()
	if image == null:
		_finish_capture({"ok": false, "error": "unavailable", "message": "the viewport has no image"})
		return
	var grabbed := Time.get_ticks_usec()
	var err := image.save_png(_job["paths"][index])
	var saved := Time.get_ticks_usec()
	if err != OK:
		_finish_capture({"ok": false, "error": "failed", "message": "could not save frame (error %d)" % err})
		return
	_job["frames"].append({
		"width": image.get_width(),
		"height": image.get_height(),
		"grab_ms": (grabbed - t0) / 1000.0,
		"save_ms": (saved - grabbed) / 1000.0,
		"at_ms": (t0 - _job["start_us"]) / 1000.0,
	})
	if _job["next_us"] == 0:
		_job["next_us"] = t0
	_job["next_us"] += _job["interval_us"]
	if _job["frames"].size() >= _job["paths"].size():
		_finish_capture({"ok": true, "frames": _job["frames"]})


func _finish_capture(reply: Dictionary) -> void:
	reply["id"] = _job["id"]
	_job = {}
	if RenderingServer.frame_post_draw.is_connected(_on_frame_post_draw):
		RenderingServer.frame_post_draw.disconnect(_on_frame_post_draw)
	_send(reply)


func _send(message: Dictionary) -> void:
	if _peer.get_status() != StreamPeerTCP.STATUS_CONNECTED:
		return
	_peer.put_data((JSON.stringify(message) + "\n").to_utf8_buffer())


func _close(code: int) -> void:
	_phase = "closing"
	if RenderingServer.frame_post_draw.is_connected(_on_frame_post_draw):
		RenderingServer.frame_post_draw.disconnect(_on_frame_post_draw)
	_job = {}
	_peer.disconnect_from_host()
	quit(code)
