extends SceneTree
# godot-mcp bridge for Godot 3.x, run as `--script /abs/bridge3.gd -- --mcp-port=N [--mcp-scene=res://x.tscn]`.
# It loads the scene, connects back to the server over loopback TCP, proves itself with the
# secret from the GODOT_MCP_SECRET environment variable, then serves JSON-lines commands.
# Replies: {"id": n, "ok": true, ...} or {"id": n, "ok": false, "error": outcome, "message": text}.

const CONNECT_TIMEOUT_MS := 10000
const SECRET_ENV := "GODOT_MCP_SECRET"

var _peer := StreamPeerTCP.new()
var _port := 0
var _scene := ""
var _phase := "connecting"  # connecting, loading, serving, closing
var _started_ms := 0
var _inbox := PoolByteArray()
var _headless := false
var _scene_loaded := false
var _load_error := ""
var _load_frames := 0

# One capture job at a time: screenshot or record.
var _job := {}


func _initialize() -> void:
	Engine.target_fps = 60
	_headless = OS.get_name() == "Server" or not OS.can_draw()
	for arg in OS.get_cmdline_args():
		if arg.begins_with("--mcp-port="):
			_port = int(arg.substr(11))
		elif arg.begins_with("--mcp-scene="):
			_scene = arg.substr(12)
	if _port <= 0:
		printerr("godot-mcp bridge: missing --mcp-port")
		quit(2)
		return
	if _scene == "":
		_scene = str(ProjectSettings.get_setting("application/run/main_scene"))
	_started_ms = OS.get_ticks_msec()
	_peer.connect_to_host("127.0.0.1", _port)


func _idle(_delta: float) -> bool:
	if _phase == "closing":
		return false
	var status := _peer.get_status()
	if _phase == "connecting":
		if status == StreamPeerTCP.STATUS_CONNECTED:
			_send({
				"type": "hello",
				"secret": OS.get_environment(SECRET_ENV),
				"engine": Engine.get_version_info().get("string", ""),
				"os": OS.get_name(),
				"headless": _headless,
			})
			_start_loading()
		elif status == StreamPeerTCP.STATUS_ERROR or OS.get_ticks_msec() - _started_ms > CONNECT_TIMEOUT_MS:
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
		_phase = "serving"
		_send_ready()
		return
	if not ResourceLoader.exists(_scene):
		_load_error = "scene %s does not exist" % _scene
		_phase = "serving"
		_send_ready()
		return
	var err := change_scene(_scene)
	if err != OK:
		_load_error = "scene %s failed to load (error %d)" % [_scene, err]
		_phase = "serving"
		_send_ready()


func _send_ready() -> void:
	_scene_loaded = _load_error == "" and current_scene != null
	if _load_error == "" and not _scene_loaded:
		_load_error = "scene %s failed to load" % _scene
	var size := root.size
	_send({
		"type": "ready",
		"scene": _scene,
		"loaded": _scene_loaded,
		"error": _load_error,
		"width": int(size.x),
		"height": int(size.y),
	})


func _read_commands() -> void:
	var available := _peer.get_available_bytes()
	if available > 0:
		var got: Array = _peer.get_data(available)
		if got[0] == OK:
			_inbox.append_array(got[1])
	while true:
		var newline := -1
		for i in range(_inbox.size()):
			if _inbox[i] == 10:
				newline = i
				break
		if newline < 0:
			return
		var line := _inbox.subarray(0, newline - 1).get_string_from_utf8() if newline > 0 else ""
		if newline + 1 < _inbox.size():
			_inbox = _inbox.subarray(newline + 1, _inbox.size() - 1)
		else:
			_inbox = PoolByteArray()
		if line.strip_edges() != "":
			_handle(line)


func _handle(line: String) -> void:
	var parsed := JSON.parse(line)
	if parsed.error != OK or typeof(parsed.result) != TYPE_DICTIONARY:
		_send({"id": null, "ok": false, "error": "invalid_argument", "message": "bad command line"})
		return
	var cmd: Dictionary = parsed.result
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
	if not _job.empty():
		_send({"id": id, "ok": false, "error": "failed", "message": "a capture is already running"})
		return
	var paths := []
	if name == "screenshot":
		paths = [str(cmd.get("path", ""))]
	else:
		paths = cmd.get("paths", [])
	for p in paths:
		if not str(p).is_abs_path():
			_send({"id": id, "ok": false, "error": "invalid_argument", "message": "capture paths must be absolute"})
			return
	var fps := float(cmd.get("fps", 60))
	if paths.empty() or fps <= 0.0:
		_send({"id": id, "ok": false, "error": "invalid_argument", "message": "nothing to capture"})
		return
	_job = {
		"id": id,
		"paths": paths,
		"interval_us": int(1000000.0 / fps),
		"next_us": 0,
		"frames": [],
		"start_us": OS.get_ticks_usec(),
	}
	VisualServer.connect("frame_post_draw", self, "_on_frame_post_draw")
	if name == "screenshot":
		# Draw now rather than waiting up to a frame for the next one.
		VisualServer.force_draw(false)


func _on_frame_post_draw() -> void:
	if _job.empty():
		return
	var now := OS.get_ticks_usec()
	if now < _job["next_us"]:
		return
	var index: int = _job["frames"].size()
	var t0 := OS.get_ticks_usec()
	var image: Image = root.get_texture().get_data()
	if image == null:
		_finish_capture({"ok": false, "error": "unavailable", "message": "the viewport has no image"})
		return
	image.flip_y()
	var grabbed := OS.get_ticks_usec()
	var err := image.save_png(_job["paths"][index])
	var saved := OS.get_ticks_usec()
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
	if VisualServer.is_connected("frame_post_draw", self, "_on_frame_post_draw"):
		VisualServer.disconnect("frame_post_draw", self, "_on_frame_post_draw")
	_send(reply)


func _send(message: Dictionary) -> void:
	if _peer.get_status() != StreamPeerTCP.STATUS_CONNECTED:
		return
	_peer.put_data((to_json(message) + "\n").to_utf8())


func _close(code: int) -> void:
	_phase = "closing"
	if not _job.empty() and VisualServer.is_connected("frame_post_draw", self, "_on_frame_post_draw"):
		VisualServer.disconnect("frame_post_draw", self, "_on_frame_post_draw")
	_job = {}
	_peer.disconnect_from_host()
	quit(code)
