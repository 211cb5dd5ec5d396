extends SceneTree
# godot-mcp bridge for Godot 3.x, run as `--script /abs/bridge3.gd -- GAME_ARGS`.
# It loads the scene, connects back to the server over loopback TCP, proves itself with the
# secret, then serves JSON-lines commands. Its settings (GODOT_MCP_PORT, GODOT_MCP_SECRET and
# GODOT_MCP_SCENE) come from the environment only: the command line is the game's.
# Replies: {"id": n, "ok": true, ...} or {"id": n, "ok": false, "error": outcome, "message": text}.

const CONNECT_TIMEOUT_MS := 10000
const SECRET_ENV := "GODOT_MCP_SECRET"
const PORT_ENV := "GODOT_MCP_PORT"
const SCENE_ENV := "GODOT_MCP_SCENE"

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
# Stepping: frames left to run before pausing again, and the command to answer then.
var _step_left := 0
var _step_id = null
# Input jobs, applied in order, one event (or one frame of waiting) at a time.
var _inputs := []
var _flushes_input := Input.has_method("flush_buffered_events")
# Game time (the process steps' delta the tree ran), the frame rate's samples, and the
# game-time waits ("after") still running: see the end of this file.
var _game_time := 0.0
var _last_delta := 0.0
var _frames_seen := 0
var _tick_us := 0
var _rate_us := []
var _rate_frames := []
var _timers := []
const _BUTTONS := {"left": 1, "right": 2, "middle": 3, "wheel_up": 4, "wheel_down": 5}


func _initialize() -> void:
	Engine.target_fps = 60
	var rng := RandomNumberGenerator.new()
	rng.randomize()
	_float_tag = "godot-mcp-float-%08x%08x%08x:" % [rng.randi(), rng.randi(), rng.randi()]
	_headless = OS.get_name() == "Server" or not OS.can_draw()
	var port := OS.get_environment(PORT_ENV)
	if port.is_valid_integer():
		_port = int(port)
	if _port <= 0 or _port > 65535:
		printerr("godot-mcp bridge: missing " + PORT_ENV)
		quit(2)
		return
	_scene = OS.get_environment(SCENE_ENV)
	if _scene != "" and not _inside_res(_scene):
		_load_error = "scene %s is not a res:// path inside the project" % _scene
	if _scene == "":
		_scene = str(ProjectSettings.get_setting("application/run/main_scene"))
	_started_ms = OS.get_ticks_msec()
	# warning-ignore:return_value_discarded
	_peer.connect_to_host("127.0.0.1", _port)


func _idle(delta: float) -> bool:
	_tick(delta)
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
	_advance_step()
	_advance_inputs()
	_advance_timers()
	_read_commands()
	return false


func _start_loading() -> void:
	_phase = "loading"
	if _load_error != "":
		_phase = "serving"
		_send_ready()
		return
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
		if _phase == "closing":  # nothing after quit is handled
			return


func _handle(line: String) -> void:
	var parsed := JSON.parse(line)
	if parsed.get_error() != OK or typeof(parsed.get_result()) != TYPE_DICTIONARY:
		_send({"id": null, "ok": false, "error": "invalid_argument", "message": "bad command line"})
		return
	var cmd: Dictionary = parsed.get_result()
	var id = cmd.get("id")
	var name := str(cmd.get("cmd", ""))
	if name == "quit":
		_send({"id": id, "ok": true})
		_close(0)
	elif name == "ping":
		# Marker lines on stderr first: once the server reads them, every line printed before
		# is in its log.
		for mark in cmd.get("marks", []):
			printerr("godot-mcp-mark " + str(mark))
		_send({"id": id, "ok": true, "fps": _rate(), "time": _game_time,
			"frame": Engine.get_idle_frames()})
	elif name == "screenshot" or name == "record":
		_begin_capture(id, name, cmd)
	elif name == "tree":
		_cmd_tree(id, cmd)
	elif name == "time":
		_cmd_time(id, cmd)
	elif name == "input":
		_cmd_input(id, cmd)
	elif name == "get" or name == "set" or name == "call":
		_cmd_node(id, name, cmd)
	elif name == "perf":
		_cmd_perf(id)
	elif name == "inspect":
		_cmd_inspect(id, cmd)
	elif name == "scripts":
		_send({"id": id, "ok": true, "scripts": _loaded_scripts()})
	elif name == "reload":
		_cmd_reload(id, cmd.get("paths", []))
	elif name == "after":
		_cmd_after(id, cmd)
	elif name == "cancel":
		_cmd_cancel(id, cmd.get("target"))
	else:
		_send({"id": id, "ok": false, "error": "invalid_argument", "message": "unknown command"})


# The pixels as they are (8-bit RGB or RGBA only): the server makes its preview from them
# without decoding the PNG again. "" when the image is another format or the write failed.
func _save_raw(image: Image, path: String) -> String:
	var mode := ""
	if image.get_format() == Image.FORMAT_RGBA8:
		mode = "RGBA"
	elif image.get_format() == Image.FORMAT_RGB8:
		mode = "RGB"
	if mode == "":
		return ""
	var file := File.new()
	if file.open(path, File.WRITE) != OK:
		return ""
	file.store_buffer(image.get_data())
	var failed := file.get_error() != OK
	file.close()
	return "" if failed else mode


# The engine's own performance monitors, read at once; draw calls (3D and 2D) are null where
# nothing draws.
func _cmd_perf(id) -> void:
	var draws = null
	if not _headless:
		draws = int(Performance.get_monitor(Performance.RENDER_DRAW_CALLS_IN_FRAME)
			+ Performance.get_monitor(Performance.RENDER_2D_DRAW_CALLS_IN_FRAME))
	_send({"id": id, "ok": true,
		"fps": _rate(),
		"frame_ms": Performance.get_monitor(Performance.TIME_PROCESS) * 1000.0,
		"physics_ms": Performance.get_monitor(Performance.TIME_PHYSICS_PROCESS) * 1000.0,
		"memory_static_bytes": int(Performance.get_monitor(Performance.MEMORY_STATIC)),
		"objects": int(Performance.get_monitor(Performance.OBJECT_COUNT)),
		"nodes": int(Performance.get_monitor(Performance.OBJECT_NODE_COUNT)),
		"orphan_nodes": int(Performance.get_monitor(Performance.OBJECT_ORPHAN_NODE_COUNT)),
		"draw_calls": draws,
		"frame": Engine.get_idle_frames()})


func _fail(id, error: String, message: String) -> void:
	_send({"id": id, "ok": false, "error": error, "message": message})


# The tree from a root: depth-first, within depth, the nodes the filters match (all without
# one). With collapse, a run of 4 or more listed siblings of one class and script, none with
# listed nodes below it, is one entry {path, class, script?, count, last}. total counts nodes.
func _cmd_tree(id, cmd: Dictionary) -> void:
	var start: Node = root.get_node_or_null(NodePath(str(cmd.get("root", "/root"))))
	if start == null:
		_fail(id, "not_found", "no node at %s" % str(cmd.get("root", "/root")))
		return
	var depth := int(cmd.get("depth", 6))
	var max_nodes := int(cmd.get("max_nodes", 300))
	var collapse: bool = typeof(cmd.get("collapse")) == TYPE_BOOL and cmd.get("collapse")
	var filters := {}
	for key in ["name", "class", "group", "script"]:
		if typeof(cmd.get(key)) == TYPE_STRING and cmd.get(key) != "":
			filters[key] = cmd.get(key)
	var classes := _tree_script_classes() if filters.has("class") else {}
	# Every matching node in order, and whether a listed node lies below it.
	var found := []
	var below := []
	var stack := [[start, 0, -1]]
	while not stack.empty():
		var item: Array = stack.pop_back()
		var node: Node = item[0]
		var level: int = item[1]
		var above: int = item[2]
		if filters.empty() or _tree_matches(node, filters, classes):
			if above >= 0:
				below[above] = true
			above = found.size()
			found.append(node)
			below.append(false)
		if level < depth:
			for i in range(node.get_child_count() - 1, -1, -1):
				stack.append([node.get_child(i), level + 1, above])
	if found.empty() and filters.has("class") and not _tree_class_known(filters["class"], classes):
		_fail(id, "invalid_argument", "class %s is neither an engine class nor a class_name of the project" % filters["class"])
		return
	var nodes := []
	var at := 0
	while at < found.size() and nodes.size() < max_nodes:
		var node: Node = found[at]
		var end := at + 1
		if collapse and not below[at]:
			while end < found.size() and not below[end] and _tree_alike(node, found[end]):
				end += 1
		if end - at < 4:
			end = at + 1
		var entry := {"path": str(node.get_path()), "class": node.get_class()}
		if end - at == 1:
			entry["name"] = str(node.name)
			entry["children"] = node.get_child_count()
		else:
			entry["count"] = end - at
			entry["last"] = str(found[end - 1].get_path())
		var script = node.get_script()
		if script != null and script.resource_path != "":
			entry["script"] = script.resource_path
		nodes.append(entry)
		at = end
	var scene = null
	if current_scene != null:
		scene = str(current_scene.get_path())
	_send({"id": id, "ok": true, "nodes": nodes, "total": found.size(),
		"truncated": at < found.size(), "current_scene": scene})


func _tree_matches(node: Node, filters: Dictionary, classes: Dictionary) -> bool:
	if filters.has("name") and not str(node.name).match(filters["name"]):
		return false
	if filters.has("group") and not node.is_in_group(filters["group"]):
		return false
	if filters.has("class") and not node.is_class(filters["class"]):
		if not _tree_script_chain_has(node.get_script(), "class", filters["class"], classes):
			return false
	if filters.has("script"):
		if not _tree_script_chain_has(node.get_script(), "script", filters["script"], classes):
			return false
	return true


# Whether a script or one it extends has the path, or the class_name (Godot 3 knows a script's
# class_name only from the project's global class list).
func _tree_script_chain_has(scr, what: String, wanted: String, classes: Dictionary) -> bool:
	var seen := 0
	while scr != null and seen < 64:
		var path: String = scr.resource_path
		if what == "script" and path == wanted:
			return true
		if what == "class" and path != "" and classes.get(path, "") == wanted:
			return true
		scr = scr.get_base_script()
		seen += 1
	return false


func _tree_script_classes() -> Dictionary:
	var out := {}
	if ProjectSettings.has_setting("_global_script_classes"):
		var listed = ProjectSettings.get_setting("_global_script_classes")
		if typeof(listed) == TYPE_ARRAY:
			for entry in listed:
				if typeof(entry) == TYPE_DICTIONARY:
					out[str(entry.get("path", ""))] = str(entry.get("class", ""))
	return out


func _tree_class_known(wanted: String, classes: Dictionary) -> bool:
	return ClassDB.class_exists(wanted) or wanted in classes.values()


func _tree_alike(first: Node, other: Node) -> bool:
	return other.get_parent() == first.get_parent() and other.get_class() == first.get_class() \
		and other.get_script() == first.get_script()


func _time_reply(id) -> void:
	_send({"id": id, "ok": true, "paused": paused, "time_scale": Engine.time_scale,
		"frame": Engine.get_idle_frames()})


func _cmd_time(id, cmd: Dictionary) -> void:
	var action := str(cmd.get("action", ""))
	if _step_id != null:
		_fail(id, "failed", "a step is still running")
		return
	if action == "pause":
		paused = true
	elif action == "resume":
		paused = false
	elif action == "scale":
		Engine.time_scale = float(cmd.get("time_scale", 1.0))
	elif action == "step":
		# Unpaused now, this frame's processing is the first step; paused again before the
		# processing of the frame after the last one.
		_step_left = int(cmd.get("frames", 1))
		_step_id = id
		paused = false
		return
	else:
		_fail(id, "invalid_argument", "unknown time action")
		return
	_time_reply(id)


# The server stopped waiting for command `target`: drop it, so nothing queued behind it waits
# for it (an input job, a frame wait, a capture, a step: a step ends paused, as it would have).
# The project's scripts the running game uses: those of every node in the tree and their
# bases, sorted.
func _loaded_scripts() -> Array:
	var found := {}
	var todo := [root]
	while not todo.empty():
		var node: Node = todo.pop_back()
		var script = node.get_script()
		while script != null:
			var path: String = script.resource_path
			if path.begins_with("res://") and path.ends_with(".gd"):
				found[path] = true
			script = script.get_base_script()
		todo += node.get_children()
	var out := found.keys()
	out.sort()
	return out


# Each script read again from its file and recompiled in place; its instances keep their
# members. The server checked that every one parses before asking.
func _cmd_reload(id, paths) -> void:
	if typeof(paths) != TYPE_ARRAY:
		_fail(id, "invalid_argument", "paths must be a list")
		return
	var done := []
	for p in paths:
		var path := str(p)
		if not path.begins_with("res://") or path.find("..") != -1 or not path.ends_with(".gd"):
			_fail(id, "invalid_argument", "%s is not a script of the project" % path)
			return
		var script = load(path)
		var file := File.new()
		if not (script is GDScript) or file.open(path, File.READ) != OK:
			_fail(id, "invalid_argument", "%s is not a script of the project" % path)
			return
		script.source_code = file.get_as_text()
		file.close()
		var err: int = script.reload(true)
		if err != OK:
			_fail(id, "failed", "%s could not be reloaded (error %d)" % [path, err])
			return
		done.append(path)
	done.sort()
	_send({"id": id, "ok": true, "reloaded": done})


func _cmd_cancel(id, target) -> void:
	var dropped := false
	for i in range(_inputs.size()):
		if _inputs[i]["id"] == target:
			_inputs.remove(i)
			dropped = true
			break
	if not _job.empty() and _job["id"] == target:
		_drop_capture()
		dropped = true
	if _step_id != null and _step_id == target:
		_step_id = null
		_step_left = 0
		paused = true
		dropped = true
	if _drop_timer(target):
		dropped = true
	if dropped and not _inputs.empty():
		_advance_inputs()
	_send({"id": id, "ok": true, "cancelled": dropped})


func _advance_step() -> void:
	if _step_id == null:
		return
	_step_left -= 1
	if _step_left <= 0:
		paused = true
		var id = _step_id
		_step_id = null
		_time_reply(id)


func _cmd_input(id, cmd: Dictionary) -> void:
	var events: Array = cmd.get("events", [])
	var actions := InputMap.get_actions()
	for ev in events:
		var kind := str(ev.get("type", ""))
		if kind == "action" and not InputMap.has_action(str(ev.get("action", ""))):
			var names := []
			for a in actions:
				if not str(a).begins_with("ui_"):
					names.append(str(a))
			_fail(id, "invalid_argument", "unknown action %s; the project's actions: %s"
				% [str(ev.get("action", "")), PoolStringArray(names).join(", ")])
			return
		if kind == "key" and OS.find_scancode_from_string(str(ev.get("key", ""))) == 0:
			_fail(id, "invalid_argument", "unknown key name %s" % str(ev.get("key", "")))
			return
	var queue := []
	for ev in events:
		queue.append(ev)
	_inputs.append({"id": id, "queue": queue, "wait": 0, "applied": 0, "total": events.size(),
		"last_mouse": Vector2()})
	if _inputs.size() == 1:
		_advance_inputs()  # the first event goes in this frame


func _advance_inputs() -> void:
	while not _inputs.empty():
		var job: Dictionary = _inputs[0]
		if job["wait"] > 0:
			job["wait"] -= 1
			return
		if job.get("until", -1.0) >= 0.0:
			if not _reached(job["until"]):
				return
			job["until"] = -1.0
		if job["queue"].empty():
			_inputs.pop_front()
			_send({"id": job["id"], "ok": true, "applied": job["applied"],
				"frame": Engine.get_idle_frames()})
			continue
		var ev: Dictionary = job["queue"].pop_front()
		var kind := str(ev.get("type", ""))
		if kind == "wait" and ev.has("seconds"):
			# Game seconds after the event before it (a tap's press), or after what came
			# before: waits in a row add up.
			var since: float = job.get("mark", -1.0)
			job["until"] = (since if since >= 0.0 else _game_time) + float(ev.get("seconds", 0.0))
			job["mark"] = job["until"]
			job["applied"] += 1
			continue
		if kind == "wait":
			job["mark"] = -1.0
			job["wait"] = int(ev.get("frames", 1))
			if not ev.get("_release", false):
				job["applied"] += 1
			continue
		var tap := not ev.has("pressed") and kind in ["action", "key", "mouse_button", "joypad_button"]
		for e in _events_of(ev, job):
			Input.parse_input_event(e)
			# Godot 3.5+ only buffers what it is given (accumulated input) until the platform
			# flushes it, which the server build never does: flushing here delivers it this
			# frame, before the nodes process. Godot 3.2 delivers at once and has no flush.
			if _flushes_input:
				Input.call("flush_buffered_events")
		if not ev.get("_release", false):
			job["applied"] += 1
			job["mark"] = _game_time
		if tap:
			var release := ev.duplicate()
			release["pressed"] = false
			release["_release"] = true
			job["queue"].push_front(release)
		if job["queue"].empty():  # the last event is in: answer now, not a frame later
			_inputs.pop_front()
			_send({"id": job["id"], "ok": true, "applied": job["applied"],
				"frame": Engine.get_idle_frames()})
			continue
		return


func _events_of(ev: Dictionary, job: Dictionary) -> Array:
	var kind := str(ev.get("type", ""))
	var pressed := bool(ev.get("pressed", true))
	if kind == "action":
		var a := InputEventAction.new()
		a.action = str(ev.get("action", ""))
		a.pressed = pressed
		a.strength = float(ev.get("strength", 1.0))
		return [a]
	if kind == "key":
		var k := InputEventKey.new()
		k.scancode = OS.find_scancode_from_string(str(ev.get("key", "")))
		k.set("physical_scancode", k.scancode)  # 3.3+: a map may name a key by where it is
		k.pressed = pressed
		k.shift = bool(ev.get("shift", false))
		k.control = bool(ev.get("ctrl", false))
		k.alt = bool(ev.get("alt", false))
		k.meta = bool(ev.get("meta", false))
		return [k]
	if kind == "joypad_button" or kind == "joypad_motion":
		return [_joypad_event(ev, pressed)]
	var at := Vector2(float(ev.get("x", 0)), float(ev.get("y", 0)))
	if kind == "mouse_button":
		var b := InputEventMouseButton.new()
		b.button_index = int(_BUTTONS.get(str(ev.get("button", "left")), 1))
		b.position = at
		b.global_position = at
		b.pressed = pressed
		b.doubleclick = bool(ev.get("double_click", false))
		job["last_mouse"] = at
		return [b]
	if kind == "mouse_motion":
		var m := InputEventMouseMotion.new()
		m.position = at
		m.global_position = at
		m.relative = at - job["last_mouse"]
		job["last_mouse"] = at
		return [m]
	if kind == "text":
		var out := []
		var text := str(ev.get("text", ""))
		for i in range(text.length()):
			for down in [true, false]:
				var c := InputEventKey.new()
				c.unicode = text.ord_at(i)
				c.pressed = down
				out.append(c)
		return out
	return []


# A button or an axis of the first joypad (device 0).
func _joypad_event(ev: Dictionary, pressed: bool) -> InputEvent:
	if str(ev.get("type", "")) == "joypad_button":
		var b := InputEventJoypadButton.new()
		b.button_index = int(ev.get("button", 0))
		b.pressed = pressed
		b.pressure = 1.0 if pressed else 0.0
		return b
	var m := InputEventJoypadMotion.new()
	m.axis = int(ev.get("axis", 0))
	m.axis_value = float(ev.get("value", 0.0))
	return m


# -- node values: get, set, call, as JSON values (docs/godot.md) -------------

const MAX_DEPTH := 8
const MAX_ITEMS := 1000
const MAX_STRING := 10000
const MAX_DEFAULT_PROPERTIES := 100
const _TYPE_NAMES := {
	TYPE_NIL: "null", TYPE_BOOL: "bool", TYPE_INT: "int", TYPE_REAL: "float",
	TYPE_STRING: "String", TYPE_VECTOR2: "Vector2", TYPE_RECT2: "Rect2",
	TYPE_VECTOR3: "Vector3", TYPE_TRANSFORM2D: "Transform2D", TYPE_PLANE: "Plane",
	TYPE_QUAT: "Quat", TYPE_AABB: "AABB", TYPE_BASIS: "Basis", TYPE_TRANSFORM: "Transform",
	TYPE_COLOR: "Color", TYPE_NODE_PATH: "NodePath", TYPE_RID: "RID", TYPE_OBJECT: "Object",
	TYPE_DICTIONARY: "Dictionary", TYPE_ARRAY: "Array",
}
var _decode_error := ""
# The prefix of _f's float placeholders: random per launch, so no game string can be one.
var _float_tag := ""


func _cmd_node(id, name: String, cmd: Dictionary) -> void:
	var path := str(cmd.get("path", ""))
	var node: Node = root.get_node_or_null(NodePath(path))
	if node == null:
		_fail(id, "not_found", "no node at %s" % path)
		return
	var known := {}
	for p in node.get_property_list():
		known[p["name"]] = p
	if name == "get":
		var names: Array = cmd.get("properties", [])
		var truncated := false
		if names.empty():
			names = _default_properties(node)
			truncated = names.size() > MAX_DEFAULT_PROPERTIES
			names = names.slice(0, MAX_DEFAULT_PROPERTIES - 1) if truncated else names
		var values := {}
		for n in names:
			if not known.has(str(n)):
				_fail(id, "invalid_argument", "unknown property %s on %s" % [str(n), node.get_class()])
				return
			values[str(n)] = _encode(node.get(str(n)))
		_send({"id": id, "ok": true, "class": node.get_class(), "values": values,
			"truncated": truncated})
	elif name == "set":
		var wanted: Dictionary = cmd.get("values", {})
		var decoded := {}
		for n in wanted:
			if not known.has(str(n)):
				_fail(id, "invalid_argument", "unknown property %s on %s" % [str(n), node.get_class()])
				return
			var current = node.get(str(n))
			_decode_error = ""
			var value = _decode(wanted[n], current)
			if _decode_error != "":
				_fail(id, "invalid_argument", "value for %s: %s" % [str(n), _decode_error])
				return
			if current != null and typeof(value) != typeof(current):
				_fail(id, "invalid_argument", "wrong type for %s: expected %s, got %s"
					% [str(n), _type_name(current), _type_name(value)])
				return
			decoded[str(n)] = value
		var back := {}
		var refused := []
		for n in decoded:
			node.set(n, decoded[n])
			back[n] = _encode(node.get(n))
			# A write the property does not take (a setter that ignores or alters it) is never
			# answered ok: what reads back must be what was sent.
			var sent = _encode(decoded[n])
			if not _same(back[n], sent):
				refused.append("%s did not take %s: it reads back %s" % [n, _short(sent), _short(back[n])])
		if not refused.empty():
			var others := " (the other values were set)" if refused.size() < decoded.size() else ""
			_fail(id, "invalid_argument", PoolStringArray(refused).join("; ") + others)
			return
		_send({"id": id, "ok": true, "values": back})
	else:
		var method := str(cmd.get("method", ""))
		if not node.has_method(method):
			_fail(id, "invalid_argument", "unknown method %s on %s" % [method, node.get_class()])
			return
		var args := []
		for a in cmd.get("args", []):
			_decode_error = ""
			args.append(_decode(a))
			if _decode_error != "":
				_fail(id, "invalid_argument", "argument %d: %s" % [args.size() - 1, _decode_error])
				return
		# The server's marks, printed to stderr around the call: the script errors it raises are
		# the lines between the two, complete once the second is read (bridge.py).
		var marks = cmd.get("marks", [])
		var marked: bool = typeof(marks) == TYPE_ARRAY and marks.size() == 2
		if marked:
			printerr("godot-mcp-mark " + str(marks[0]))
		var result = node.callv(method, args)
		if marked:
			printerr("godot-mcp-mark " + str(marks[1]))
		_send({"id": id, "ok": true, "result": _encode(result)})


# Two encoded values are the same: numbers to a millionth.
func _same(a, b) -> bool:
	var ka := typeof(a)
	var kb := typeof(b)
	if ka == TYPE_INT and kb == TYPE_INT:
		return a == b
	var x = _number_of(a)
	var y = _number_of(b)
	if x != null and y != null:
		return abs(float(x) - float(y)) <= 0.000001 * max(1.0, abs(float(y)))
	if ka != kb:
		return false
	if ka == TYPE_ARRAY:
		if a.size() != b.size():
			return false
		for i in range(a.size()):
			if not _same(a[i], b[i]):
				return false
		return true
	if ka == TYPE_DICTIONARY:
		if a.size() != b.size():
			return false
		for k in a:
			if not b.has(k) or not _same(a[k], b[k]):
				return false
		return true
	return a == b


# An encoded value as a short text for a message.
func _short(v) -> String:
	var text := _json(v)
	return text.substr(0, 200) + "…" if text.length() > 200 else text


func _default_properties(node: Node) -> Array:
	var names := []
	var script = node.get_script()
	if script != null:
		for p in script.get_script_property_list():
			if not p["name"] in names:
				names.append(p["name"])
	for p in node.get_property_list():
		if p["usage"] & PROPERTY_USAGE_STORAGE and not p["name"] in names:
			names.append(p["name"])
	return names


func _type_name(value) -> String:
	if typeof(value) == TYPE_OBJECT and value != null:
		return value.get_class()
	return str(_TYPE_NAMES.get(typeof(value), "Variant"))


func _encode(v, depth := 0):
	var kind := typeof(v)
	if kind == TYPE_NIL or kind == TYPE_BOOL or kind == TYPE_INT:
		return v
	if kind == TYPE_REAL:
		return _f(v)
	if kind == TYPE_STRING:
		if v.length() > MAX_STRING:
			return {"type": "String", "truncated": true, "length": v.length(),
				"head": v.substr(0, MAX_STRING)}
		return v
	if kind == TYPE_VECTOR2:
		return {"type": "Vector2", "x": _f(v.x), "y": _f(v.y)}
	if kind == TYPE_VECTOR3:
		return {"type": "Vector3", "x": _f(v.x), "y": _f(v.y), "z": _f(v.z)}
	if kind == TYPE_RECT2:
		return {"type": "Rect2", "x": _f(v.position.x), "y": _f(v.position.y),
			"w": _f(v.size.x), "h": _f(v.size.y)}
	if kind == TYPE_COLOR:
		return {"type": "Color", "r": _f(v.r), "g": _f(v.g), "b": _f(v.b), "a": _f(v.a)}
	if kind == TYPE_TRANSFORM2D:
		return {"type": "Transform2D", "x": [_f(v.x.x), _f(v.x.y)], "y": [_f(v.y.x), _f(v.y.y)],
			"origin": [_f(v.origin.x), _f(v.origin.y)]}
	if kind == TYPE_BASIS:
		return {"type": "Basis", "x": [_f(v.x.x), _f(v.x.y), _f(v.x.z)],
			"y": [_f(v.y.x), _f(v.y.y), _f(v.y.z)], "z": [_f(v.z.x), _f(v.z.y), _f(v.z.z)]}
	if kind == TYPE_TRANSFORM:
		return {"type": "Transform", "basis": _encode(v.basis),
			"origin": [_f(v.origin.x), _f(v.origin.y), _f(v.origin.z)]}
	if kind == TYPE_QUAT:
		return {"type": "Quat", "x": _f(v.x), "y": _f(v.y), "z": _f(v.z), "w": _f(v.w)}
	if kind == TYPE_NODE_PATH:
		return {"type": "NodePath", "path": str(v)}
	if kind == TYPE_OBJECT:
		if v == null or not is_instance_valid(v):
			return null
		var out := {"type": "Object", "class": v.get_class()}
		if v is Node and v.is_inside_tree():
			out["path"] = str(v.get_path())
		elif v is Resource and v.resource_path != "":
			out["path"] = v.resource_path
		return out
	if kind == TYPE_DICTIONARY:
		if depth >= MAX_DEPTH:
			return {"type": "truncated", "remaining": v.size()}
		var plain := true
		for k in v:
			if typeof(k) != TYPE_STRING or k == "type":
				plain = false
				break
		var count := 0
		if plain:
			var out := {}
			for k in v:
				if count >= MAX_ITEMS:
					out["…"] = {"type": "truncated", "remaining": v.size() - count}
					break
				out[k] = _encode(v[k], depth + 1)
				count += 1
			return out
		var items := []
		for k in v:
			if count >= MAX_ITEMS:
				items.append({"type": "truncated", "remaining": v.size() - count})
				break
			items.append([_encode(k, depth + 1), _encode(v[k], depth + 1)])
			count += 1
		return {"type": "Dictionary", "items": items}
	if kind >= TYPE_ARRAY and kind <= TYPE_COLOR_ARRAY:
		if depth >= MAX_DEPTH:
			return [{"type": "truncated", "remaining": v.size()}]
		var out := []
		for i in range(v.size()):
			if i >= MAX_ITEMS:
				out.append({"type": "truncated", "remaining": v.size() - i})
				break
			out.append(_encode(v[i], depth + 1))
		return out
	return {"type": _type_name(v), "value": str(v)}


func _num(v) -> float:
	if typeof(v) == TYPE_DICTIONARY:
		v = _decode(v)  # a tagged number
	if typeof(v) != TYPE_REAL and typeof(v) != TYPE_INT:
		_decode_error = "expected a number"
		return 0.0
	return float(v)


func _vec2(a) -> Vector2:
	if typeof(a) != TYPE_ARRAY or a.size() != 2:
		_decode_error = "expected a list of 2 numbers"
		return Vector2()
	return Vector2(_num(a[0]), _num(a[1]))


func _vec3(a) -> Vector3:
	if typeof(a) != TYPE_ARRAY or a.size() != 3:
		_decode_error = "expected a list of 3 numbers"
		return Vector3()
	return Vector3(_num(a[0]), _num(a[1]), _num(a[2]))


# A decoded value bent toward the type of `like` (a property's current value), where JSON cannot
# say it: an integral float for an int, an int for a float.
func _decode(v, like = null):
	var value = _decode_value(v)
	if typeof(value) == TYPE_REAL and typeof(like) == TYPE_INT and _integral(value):
		return int(value)
	if typeof(value) == TYPE_INT and typeof(like) == TYPE_REAL:
		return float(value)
	return value


func _integral(f: float) -> bool:
	return not is_nan(f) and not is_inf(f) and abs(f) <= 9007199254740992.0 and f == floor(f)


func _decode_value(v):
	var kind := typeof(v)
	if kind == TYPE_REAL:
		# JSON.parse reads every number as a float; the server tags the floats that are integral
		# (and the ints a double cannot hold), so a plain integral number is an int.
		return int(v) if _integral(v) else v
	if kind == TYPE_ARRAY:
		var out := []
		for item in v:
			out.append(_decode(item))
		return out
	if kind != TYPE_DICTIONARY:
		return v
	if not v.has("type"):
		var plain := {}
		for k in v:
			plain[k] = _decode(v[k])
		return plain
	var t := str(v["type"])
	if t == "Vector2" or t == "Vector2i":
		return Vector2(_num(v.get("x")), _num(v.get("y")))
	if t == "Vector3" or t == "Vector3i":
		return Vector3(_num(v.get("x")), _num(v.get("y")), _num(v.get("z")))
	if t == "Rect2":
		return Rect2(_num(v.get("x")), _num(v.get("y")), _num(v.get("w")), _num(v.get("h")))
	if t == "Color":
		return Color(_num(v.get("r")), _num(v.get("g")), _num(v.get("b")), _num(v.get("a", 1.0)))
	if t == "Transform2D":
		return Transform2D(_vec2(v.get("x")), _vec2(v.get("y")), _vec2(v.get("origin")))
	if t == "Basis":
		return Basis(_vec3(v.get("x")), _vec3(v.get("y")), _vec3(v.get("z")))
	if t == "Transform" or t == "Transform3D":
		var basis = _decode(v.get("basis", {}))
		if typeof(basis) != TYPE_BASIS:
			_decode_error = "a Transform needs a Basis"
			return null
		return Transform(basis, _vec3(v.get("origin")))
	if t == "Quat" or t == "Quaternion":
		return Quat(_num(v.get("x")), _num(v.get("y")), _num(v.get("z")), _num(v.get("w")))
	if t == "NodePath":
		return NodePath(str(v.get("path", "")))
	if t == "int":
		var whole = v.get("value")
		if typeof(whole) == TYPE_STRING:
			return _parse_int(whole)
		if typeof(whole) == TYPE_INT or (typeof(whole) == TYPE_REAL and _integral(whole)):
			return int(whole)
		_decode_error = "expected an integer"
		return null
	if t == "float":
		var number = v.get("value")
		if typeof(number) == TYPE_REAL or typeof(number) == TYPE_INT:
			return float(number)
		var word := str(number)
		if word == "nan":
			return NAN
		if word == "inf":
			return INF
		if word == "-inf":
			return -INF
		_decode_error = "a float is nan, inf or -inf"
		return null
	if t == "Dictionary":
		var out := {}
		for pair in v.get("items", []):
			if typeof(pair) != TYPE_ARRAY or pair.size() != 2:
				_decode_error = "Dictionary items are [key, value] pairs"
				return null
			out[_decode(pair[0])] = _decode(pair[1])
		return out
	if t == "Object":
		var where := str(v.get("path", ""))
		if where.begins_with("res://"):
			if not _inside_res(where):
				_decode_error = "an Object path must stay inside res://: %s" % where
				return null
			return load(where)
		var found = root.get_node_or_null(NodePath(where))
		if found == null:
			_decode_error = "no object at %s" % where
		return found
	_decode_error = "unknown type %s" % t
	return null


# A res:// path that stays inside the project: no "..", ".", empty segment or backslash (the
# engine reads a backslash as "/"), so no spelling of it leaves res://.
func _inside_res(path: String) -> bool:
	if not path.begins_with("res://") or path.find("\\") != -1:
		return false
	for part in path.substr(6, path.length() - 6).split("/"):
		if part == "" or part == "." or part == "..":
			return false
	return true


# An int written in decimal digits (a sign allowed), exactly, in 64 bits (String.to_int is 32).
func _parse_int(text: String):
	var negative := text.begins_with("-")
	var digits := text.substr(1, text.length() - 1) if negative or text.begins_with("+") else text
	if digits == "" or digits.length() > 19:
		_decode_error = "an int is at most 19 decimal digits"
		return null
	var n := 0  # accumulated negative, so that the most negative int fits
	for i in range(digits.length()):
		var d := digits.ord_at(i) - 48
		if d < 0 or d > 9:
			_decode_error = "an int is decimal digits"
			return null
		if n < -922337203685477580 or (n == -922337203685477580 and d > 8):
			_decode_error = "an int must fit 64 bits"
			return null
		n = n * 10 - d
	if negative:
		return n
	if n == -9223372036854775807 - 1:
		_decode_error = "an int must fit 64 bits"
		return null
	return -n


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
	var raw_path := str(cmd.get("raw_path", "")) if name == "screenshot" else ""
	if raw_path != "" and not raw_path.is_abs_path():
		_send({"id": id, "ok": false, "error": "invalid_argument", "message": "capture paths must be absolute"})
		return
	# A project in low-processor mode draws only when something changes: a recording would
	# wait for frames that never come. It draws every frame while the job runs.
	_job = {
		"id": id,
		"paths": paths,
		"raw_path": raw_path,
		"interval_us": int(1000000.0 / fps),
		"next_us": 0,
		"frames": [],
		"start_us": OS.get_ticks_usec(),
		"low_processor": OS.low_processor_usage_mode,
	}
	OS.low_processor_usage_mode = false
	# warning-ignore:return_value_discarded
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
	if _job["raw_path"] != "" and image.get_format() != Image.FORMAT_RGBA8 \
			and image.get_format() != Image.FORMAT_RGB8:
		# As save_png converts a float viewport image (GLES3's RGBAH), once, so the PNG and the
		# raw pixels come from one 8-bit image.
		if image.detect_alpha() != Image.ALPHA_NONE:
			image.convert(Image.FORMAT_RGBA8)
		else:
			image.convert(Image.FORMAT_RGB8)
	var grabbed := OS.get_ticks_usec()
	var err := image.save_png(_job["paths"][index])
	var saved := OS.get_ticks_usec()
	if err != OK:
		_finish_capture({"ok": false, "error": "failed", "message": "could not save frame (error %d)" % err})
		return
	var frame := {
		"width": image.get_width(),
		"height": image.get_height(),
		"grab_ms": (grabbed - t0) / 1000.0,
		"save_ms": (saved - grabbed) / 1000.0,
		"at_ms": (t0 - _job["start_us"]) / 1000.0,
	}
	if _job["raw_path"] != "":
		var mode := _save_raw(image, _job["raw_path"])
		if mode != "":
			frame["raw"] = mode
	_job["frames"].append(frame)
	if _job["next_us"] == 0:
		_job["next_us"] = t0
	_job["next_us"] += _job["interval_us"]
	if _job["frames"].size() >= _job["paths"].size():
		_finish_capture({"ok": true, "frames": _job["frames"]})


func _finish_capture(reply: Dictionary) -> void:
	reply["id"] = _job["id"]
	_drop_capture()
	_send(reply)


func _drop_capture() -> void:
	if _job.empty():
		return
	OS.low_processor_usage_mode = _job["low_processor"]
	_job = {}
	if VisualServer.is_connected("frame_post_draw", self, "_on_frame_post_draw"):
		VisualServer.disconnect("frame_post_draw", self, "_on_frame_post_draw")


func _send(message: Dictionary) -> void:
	if _peer.get_status() != StreamPeerTCP.STATUS_CONNECTED:
		return
	# warning-ignore:return_value_discarded
	_peer.put_data((_json(message) + "\n").to_utf8())


# to_json writes a float that is integral as an int (9.0 as 9): _f gives such a float as a string
# only this bridge can make, "<_float_tag>9.0", which _json then writes bare, as 9.0.
func _f(f: float):
	if is_nan(f):
		return {"type": "float", "value": "nan"}
	if is_inf(f):
		return {"type": "float", "value": "inf" if f > 0 else "-inf"}
	if f != floor(f):
		return f
	var text := str(f)
	if text.find("e") < 0 and text.find(".") < 0:
		text += ".0"
	return _float_tag + text


# A number of an encoded value, or null (the float placeholder of _f counts as its number).
func _number_of(v):
	var kind := typeof(v)
	if kind == TYPE_INT or kind == TYPE_REAL:
		return v
	if kind == TYPE_STRING and v.begins_with(_float_tag):
		return float(v.substr(_float_tag.length(), v.length() - _float_tag.length()))
	return null


func _json(v) -> String:
	var text := to_json(v)
	var quoted := "\"" + _float_tag
	var at := text.find(quoted)
	if at < 0:
		return text
	var parts := PoolStringArray()
	var from := 0
	while at >= 0:
		var close := text.find("\"", at + quoted.length())
		parts.append(text.substr(from, at - from))
		parts.append(text.substr(at + quoted.length(), close - at - quoted.length()))
		from = close + 1
		at = text.find(quoted, from)
	parts.append(text.substr(from, text.length() - from))
	return parts.join("")


func _close(code: int) -> void:
	_phase = "closing"
	if not _job.empty() and VisualServer.is_connected("frame_post_draw", self, "_on_frame_post_draw"):
		VisualServer.disconnect("frame_post_draw", self, "_on_frame_post_draw")
	_job = {}
	_peer.disconnect_from_host()
	quit(code)


# -- game time and the frame rate (docs/godot.md, "Game time and the frame rate") ------------

const RATE_WINDOW_US := 500000  # a rate is measured over at least this much of the last frames
const RATE_SPACING_US := 5000  # samples are this far apart at least: 256 cover over a second
const RATE_SAMPLES := 256


# Once a frame, first: the tree's time advances by the step it processed last frame (scaled by
# time_scale, none while paused), and the frame is sampled for the rate.
func _tick(delta: float) -> void:
	if not paused:
		_game_time += _last_delta
	_last_delta = delta
	_frames_seen += 1
	_tick_us = OS.get_ticks_usec()
	if _rate_us.empty() or _tick_us - int(_rate_us.back()) >= RATE_SPACING_US:
		_rate_us.append(_tick_us)
		_rate_frames.append(_frames_seen)
		if _rate_us.size() > RATE_SAMPLES:
			_rate_us.pop_front()
			_rate_frames.pop_front()


# Frames a second over the shortest run of the last frames that spans RATE_WINDOW_US; null
# until the game's frames span that long (never the engine's first-second placeholder).
func _rate():
	var i := _rate_us.size() - 1
	while i >= 0:
		var span: int = _tick_us - int(_rate_us[i])
		if span >= RATE_WINDOW_US:
			return float(_frames_seen - int(_rate_frames[i])) * 1000000.0 / float(span)
		i -= 1
	return null


func _reached(until: float) -> bool:
	return _game_time >= until - 0.000001


# {"cmd": "after", "seconds": S}: answered once S seconds of game time have passed.
func _cmd_after(id, cmd: Dictionary) -> void:
	var seconds := float(cmd.get("seconds", 0.0))
	_timers.append({"id": id, "until": _game_time + max(seconds, 0.0)})


func _advance_timers() -> void:
	var i := 0
	while i < _timers.size():
		if _reached(_timers[i]["until"]):
			_send({"id": _timers[i]["id"], "ok": true, "frame": Engine.get_idle_frames(),
				"time": _game_time})
			_timers.remove(i)
		else:
			i += 1


func _drop_timer(target) -> bool:
	for i in range(_timers.size()):
		if _timers[i]["id"] == target:
			_timers.remove(i)
			return true
	return false
# -- inspect: a node's script, methods, wiring, groups and properties (docs/godot.md) --------
# Godot 3 keeps no line numbers or argument names in a script's method list and cannot ask a
# script its class_name: they are read from its source and the global class list.

const INSPECT_MAX := 200  # items a list
const INSPECT_VALUE_CHARS := 16384  # a property value's JSON past this is left out, sized
# Bytes of items one reply may carry: well under what the server reads as one line (4 MiB).
const INSPECT_REPLY_BYTES := 1500000
const INSPECT_ALL := ["script", "methods", "signals", "groups", "properties"]
const _ENGINE_GROUPS := ["idle_process", "idle_process_internal", "physics_process",
	"physics_process_internal"]
const _POOL_NAMES := {TYPE_RAW_ARRAY: "PoolByteArray", TYPE_INT_ARRAY: "PoolIntArray",
	TYPE_REAL_ARRAY: "PoolRealArray", TYPE_STRING_ARRAY: "PoolStringArray",
	TYPE_VECTOR2_ARRAY: "PoolVector2Array", TYPE_VECTOR3_ARRAY: "PoolVector3Array",
	TYPE_COLOR_ARRAY: "PoolColorArray"}
# Words that may stand before `func` on a top-level line.
const _FUNC_PREFIXES := ["static", "remote", "master", "puppet", "slave", "sync", "remotesync",
	"mastersync", "puppetsync"]
var _script_methods := {}  # a script's instance id -> {method name: true}, for one inspect
var _inspect_room := 0  # bytes of items the reply being built may still take


# Whether `item` may join `list`: under INSPECT_MAX items and still fitting the reply (its room
# taken if so); if not, `part` is named in `truncated` (once).
func _inspect_keeps(list: Array, item, truncated: Array, part: String) -> bool:
	var size := _json(item).to_utf8().size()
	if list.size() >= INSPECT_MAX or size > _inspect_room:
		if not part in truncated:
			truncated.append(part)
		return false
	_inspect_room -= size
	return true


func _cmd_inspect(id, cmd: Dictionary) -> void:
	var path := str(cmd.get("path", ""))
	var node: Node = root.get_node_or_null(NodePath(path)) if path != "" else null
	if node == null:
		_fail(id, "not_found", "no node at %s" % path)
		return
	var include = cmd.get("include", INSPECT_ALL)
	if typeof(include) != TYPE_ARRAY:
		include = INSPECT_ALL
	_script_methods = {}
	_inspect_room = INSPECT_REPLY_BYTES
	var chain := []
	var script = node.get_script()
	while script != null and chain.size() < 64:
		chain.append(script)
		script = script.get_base_script()
	var truncated := []
	var reply := {"id": id, "ok": true, "class": node.get_class()}
	if "script" in include:
		reply["script"] = _inspect_script(chain)
	if "methods" in include:
		reply["methods"] = _inspect_methods(chain, truncated)
	if "signals" in include:
		reply["signals"] = _inspect_signals(node, chain, truncated)
		reply["connected_in"] = _inspect_incoming(node, truncated)
	if "groups" in include:
		reply["groups"] = _inspect_groups(node, truncated)
	if "properties" in include:
		reply["properties"] = _inspect_properties(node, chain, truncated)
	reply["truncated"] = truncated
	_script_methods = {}
	_send(reply)


func _inspect_script(chain: Array):
	if chain.empty():
		return null
	var script = chain[0]
	var out := {"path": script.resource_path}
	var name := _script_class_name(script)
	if name != "":
		out["class_name"] = name
	if chain.size() > 1:
		var base = chain[1]
		out["extends"] = base.resource_path if base.resource_path != "" else _script_class_name(base)
	else:
		out["extends"] = str(script.get_instance_base_type())
	return out


func _script_class_name(script) -> String:
	var path: String = script.resource_path
	var classes := _tree_script_classes() if path != "" else {}
	if classes.has(path):
		return str(classes[path])
	for line in _source_of(script).split("\n"):
		var found := _declared(line, "class_name")
		if found != "":
			return found
	return ""


# The name `line` declares with `keyword` at its start ("signal hit(a)": "hit"), else "".
# (Read by hand: Godot 3.2's RegEx prints an engine error on every search.)
func _declared(line: String, keyword: String) -> String:
	if not line.begins_with(keyword + " ") and not line.begins_with(keyword + "\t"):
		return ""
	var word := _word_at(line, keyword.length())
	return word[0]


# [the identifier after the blanks at `at` in `text`, the index after it].
func _word_at(text: String, at: int) -> Array:
	while at < text.length() and (text[at] == " " or text[at] == "\t"):
		at += 1
	var start := at
	while at < text.length():
		var c := text.ord_at(at)
		var letter := (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95
		if not letter and not (at > start and c >= 48 and c <= 57):
			break
		at += 1
	return [text.substr(start, at - start), at]


# [the name, the index after its "("] of a top-level func line, else [].
func _func_at(line: String) -> Array:
	var at := 0
	while at < line.length():
		var word := _word_at(line, at)
		if word[0] == "func":
			var called := _word_at(line, word[1])
			var after: int = called[1]
			while after < line.length() and (line[after] == " " or line[after] == "\t"):
				after += 1
			if called[0] == "" or after >= line.length() or line[after] != "(":
				return []
			return [called[0], after + 1]
		if not word[0] in _FUNC_PREFIXES:
			return []
		at = word[1]
	return []


func _source_of(script) -> String:
	if not (script is GDScript):
		return ""
	return script.source_code


# The script's own methods, then those of each script it extends, each in source order with
# its func line; engine methods and Godot 3's implicit _init never (only what a source writes).
func _inspect_methods(chain: Array, truncated: Array) -> Array:
	var out := []
	for i in range(chain.size()):
		var script = chain[i]
		var listed := {}  # name -> the engine's argument list; a script's own come first
		for m in script.get_script_method_list():
			var mname := str(m.get("name", ""))
			if not listed.has(mname):
				listed[mname] = m.get("args", [])
		var source := _source_of(script)
		var found := []
		if source != "":
			found = _source_funcs(source)
		else:  # no source: what this script adds to its base's list, without a line
			var base_names := {}
			if i + 1 < chain.size():
				base_names = _names_in(chain[i + 1].get_script_method_list())
			for mname in listed:
				if not base_names.has(mname) and mname != "_init":
					found.append([mname, null, []])
		for f in found:
			if not listed.has(f[0]):
				continue
			var entry := {"name": f[0], "args": _arg_names(listed[f[0]], f[2]),
				"path": script.resource_path, "line": f[1]}
			if not _inspect_keeps(out, entry, truncated, "methods"):
				return out
			out.append(entry)
	return out


# [name, line, argument names] of each top-level func of a source, in order.
func _source_funcs(source: String) -> Array:
	var out := []
	var lines := source.split("\n")
	for i in range(lines.size()):
		var line: String = lines[i]
		if line == "" or line[0] == "\t" or line[0] == " " or line[0] == "#":
			continue
		var found := _func_at(line)
		if not found.empty():
			out.append([found[0], i + 1, _source_args(lines, i, found[1])])
	return out


# The argument names of a func whose "(" ends at `at` of line `row` (it may span lines).
func _source_args(lines: PoolStringArray, row: int, at: int) -> Array:
	var parts := []
	var part := ""
	var depth := 1
	var quote := ""
	var r := row
	var text: String = lines[row].substr(at, lines[row].length() - at)
	while depth > 0:
		for k in range(text.length()):
			var c: String = text[k]
			if quote != "":
				if c == quote:
					quote = ""
			elif c == "\"" or c == "'":
				quote = c
			elif c == "#":
				break
			elif c == "(" or c == "[" or c == "{":
				depth += 1
			elif c == ")" or c == "]" or c == "}":
				depth -= 1
				if depth == 0:
					break
			elif c == "," and depth == 1:
				parts.append(part)
				part = ""
				continue
			part += c
		r += 1
		if depth == 0 or r >= lines.size() or r > row + 64:
			break
		text = lines[r]
		part += " "
	parts.append(part)
	var names := []
	for p in parts:
		var name: String = p.strip_edges()
		for sep in [":", "=", " "]:
			var cut := name.find(sep)
			if cut >= 0:
				name = name.substr(0, cut).strip_edges()
		if name != "":
			names.append(name)
	return names


# The engine's argument names where it kept them all, else the source's.
func _arg_names(listed, from_source: Array) -> Array:
	var names := []
	if typeof(listed) == TYPE_ARRAY:
		for a in listed:
			var aname := str(a.get("name", "")) if typeof(a) == TYPE_DICTIONARY else ""
			if aname == "":
				return from_source
			names.append(aname)
	return names if not names.empty() or from_source.empty() else from_source


# Every signal the script declares (with or without connections), then every other signal of
# the node that has a connection the project made.
func _inspect_signals(node: Node, chain: Array, truncated: Array) -> Array:
	var names := []
	var declared := {}
	if not chain.empty():
		var listed := _names_in(chain[0].get_script_signal_list())
		# In the order the sources declare them (the script's own first): the engine's list
		# has no order.
		for script in chain:
			for line in _source_of(script).split("\n"):
				var sname := _declared(line, "signal")
				if listed.has(sname) and not declared.has(sname):
					declared[sname] = true
					names.append(sname)
		var rest := []
		for sname in listed:
			if not declared.has(sname):
				rest.append(sname)
		rest.sort()
		for sname in rest:
			declared[sname] = true
			names.append(sname)
	for s in node.get_signal_list():
		var sname := str(s.get("name", ""))
		if not declared.has(sname) and not sname in names:
			names.append(sname)
	var out := []
	for sname in names:
		var connections := []
		for c in node.get_signal_connection_list(sname):
			var target = c.get("target")
			var method := str(c.get("method", ""))
			if not _made_by_project(target, method, int(c.get("flags", 0))):
				continue
			var entry := {"node": _object_name(target), "method": method}
			if not _inspect_keeps(connections, entry, truncated, "signals"):
				break
			connections.append(entry)
		if declared.has(sname) or not connections.empty():
			if not _inspect_keeps(out, sname, truncated, "signals"):
				break
			out.append({"name": sname, "connections": connections})
	return out


# Other objects' signals connected to this node's methods.
func _inspect_incoming(node: Node, truncated: Array) -> Array:
	var out := []
	for c in node.get_incoming_connections():
		var source = c.get("source")
		var sname := str(c.get("signal_name", ""))
		var method := str(c.get("method_name", ""))
		if typeof(source) != TYPE_OBJECT or not is_instance_valid(source) or source == node:
			continue
		var flags := 0
		for o in source.get_signal_connection_list(sname):
			if o.get("target") == node and str(o.get("method", "")) == method:
				flags = int(o.get("flags", 0))
				break
		if not _made_by_project(node, method, flags):
			continue
		var entry := {"node": _object_name(source), "signal": sname, "method": method}
		if not _inspect_keeps(out, entry, truncated, "connected_in"):
			break
		out.append(entry)
	return out


# A connection the project made (in a scene, or in its code), not one the engine makes for
# itself: to its own internal methods, a viewport, a container's sorting, or this bridge.
func _made_by_project(target, method: String, flags: int) -> bool:
	if typeof(target) != TYPE_OBJECT or not is_instance_valid(target) or target == self:
		return false
	if flags & CONNECT_PERSIST:
		return true
	if _script_defines(target, method):
		return true
	if method.begins_with("_") or target is Viewport:
		return false
	return not (target is Container and method == "queue_sort")


func _script_defines(target: Object, method: String) -> bool:
	var script = target.get_script()
	if script == null:
		return false
	var key: int = script.get_instance_id()
	if not _script_methods.has(key):
		_script_methods[key] = _names_in(script.get_script_method_list())
	return _script_methods[key].has(method)


# {name: true} of each entry of an engine list (methods, signals, properties).
func _names_in(listed: Array) -> Dictionary:
	var names := {}
	for entry in listed:
		names[str(entry.get("name", ""))] = true
	return names


# A node by its absolute path; another object by its res:// path, else its class.
func _object_name(obj) -> String:
	if obj is Node and obj.is_inside_tree():
		return str(obj.get_path())
	if obj is Resource and obj.resource_path != "":
		return obj.resource_path
	return "<%s>" % obj.get_class()


# The groups the project put the node in, sorted; never the engine's own.
func _inspect_groups(node: Node, truncated: Array) -> Array:
	var out := []
	for g in node.get_groups():
		var gname := str(g)
		if gname.begins_with("_") or gname in _ENGINE_GROUPS:
			continue
		if gname.begins_with("root_canvas") and gname.substr(11, gname.length() - 11).is_valid_integer():
			continue
		out.append(gname)
	out.sort()
	var kept := []
	for gname in out:
		if not _inspect_keeps(kept, gname, truncated, "groups"):
			break
		kept.append(gname)
	return kept


# The script's variables (its own first, then each base's), then the stored properties whose
# value differs from a fresh instance of the node's class.
func _inspect_properties(node: Node, chain: Array, truncated: Array) -> Array:
	var out := []
	var seen := {"script": true}
	for i in range(chain.size()):
		var base_names := {}
		if i + 1 < chain.size():
			base_names = _names_in(chain[i + 1].get_script_property_list())
		for p in chain[i].get_script_property_list():
			var pname := str(p.get("name", ""))
			if seen.has(pname) or base_names.has(pname) \
					or not (int(p.get("usage", 0)) & PROPERTY_USAGE_SCRIPT_VARIABLE):
				continue
			seen[pname] = true
			var entry := _inspect_property(p, node.get(pname))
			if not _inspect_keeps(out, entry, truncated, "properties"):
				return out
			out.append(entry)
	var cls := node.get_class()
	var defaults = ClassDB.instance(cls) if ClassDB.can_instance(cls) else null
	for p in node.get_property_list():
		var pname := str(p.get("name", ""))
		if seen.has(pname) or not (int(p.get("usage", 0)) & PROPERTY_USAGE_STORAGE):
			continue
		seen[pname] = true
		var value = node.get(pname)
		if defaults != null and _same(_encode(value), _encode(defaults.get(pname))):
			continue
		var entry := _inspect_property(p, value)
		if not _inspect_keeps(out, entry, truncated, "properties"):
			break
		out.append(entry)
	if defaults is Node:
		defaults.free()
	return out


func _inspect_property(info: Dictionary, value) -> Dictionary:
	var encoded = _encode(value)
	var text := _json(encoded)
	var size := text.to_utf8().size()
	if text.length() > INSPECT_VALUE_CHARS or size > _inspect_room - 1024:  # sized, not sent
		encoded = {"type": "truncated", "bytes": size}
	var kind := int(info.get("type", TYPE_NIL))
	var type_name := str(_TYPE_NAMES.get(kind, _POOL_NAMES.get(kind, "Variant")))
	if kind == TYPE_NIL:
		type_name = "Variant"
	elif kind == TYPE_OBJECT:
		var cls := str(info.get("class_name", ""))
		if cls == "" and int(info.get("hint", 0)) == PROPERTY_HINT_RESOURCE_TYPE:
			cls = str(info.get("hint_string", ""))
		type_name = cls if cls != "" else "Object"
	return {"name": str(info.get("name", "")), "type": type_name,
		"exported": (int(info.get("usage", 0)) & PROPERTY_USAGE_EDITOR) != 0, "value": encoded}
