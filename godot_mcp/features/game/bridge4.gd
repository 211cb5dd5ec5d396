extends SceneTree
# godot-mcp bridge for Godot 4.x: the same JSON-lines protocol as bridge3.gd, written against the
# Godot 4 API. Run as `--script /abs/bridge4.gd -- GAME_ARGS`. Its settings (GODOT_MCP_PORT,
# GODOT_MCP_SECRET and GODOT_MCP_SCENE) come from the environment only: the command line is the
# game's.
# Replies: {"id": n, "ok": true, ...} or {"id": n, "ok": false, "error": outcome, "message": text}.
# It runs in the test suite's Godot 4 lane (4.6.3) like bridge3.gd in the Godot 3 lanes; the fast
# lane parses it with gdtoolkit (tests/godot/test_bridge4.py) and checks that it handles every
# command bridge3.gd handles.
#
# The bridge runs under the host project's GDScript warning settings, and a project may set any of
# them to Error. So everything here is typed explicitly (no `:=`, no untyped `for` iterator: loops
# are `while` loops over a typed index, since typed `for x: T` needs 4.2), no method is called on a
# Variant, no Variant is passed to a typed parameter (numbers and flags from JSON go through
# _as_int/_as_float/_as_bool), no Variant is cast with `as`, and no return value is dropped.

const CONNECT_TIMEOUT_MS: int = 10000
const SECRET_ENV: String = "GODOT_MCP_SECRET"
const PORT_ENV: String = "GODOT_MCP_PORT"
const SCENE_ENV: String = "GODOT_MCP_SCENE"
# Bounds of Godot values as JSON (docs/godot.md).
const MAX_DEPTH: int = 8
const MAX_ITEMS: int = 1000
const MAX_STRING: int = 10000
const MAX_DEFAULT_PROPERTIES: int = 100
const _BUTTONS: Dictionary = {
	"left": MOUSE_BUTTON_LEFT,
	"right": MOUSE_BUTTON_RIGHT,
	"middle": MOUSE_BUTTON_MIDDLE,
	"wheel_up": MOUSE_BUTTON_WHEEL_UP,
	"wheel_down": MOUSE_BUTTON_WHEEL_DOWN,
}
const _EVENT_KINDS: Array = ["action", "key", "mouse_button", "mouse_motion", "text", "wait"]
const _JOYPAD_KINDS: Array = ["joypad_button", "joypad_motion"]
# Type names as Godot 4 spells them (not every 4.x has a global function for this).
const _TYPE_NAMES: Dictionary = {
	TYPE_NIL: "null", TYPE_BOOL: "bool", TYPE_INT: "int", TYPE_FLOAT: "float",
	TYPE_STRING: "String", TYPE_VECTOR2: "Vector2", TYPE_VECTOR2I: "Vector2i",
	TYPE_RECT2: "Rect2", TYPE_RECT2I: "Rect2i", TYPE_VECTOR3: "Vector3", TYPE_VECTOR3I: "Vector3i",
	TYPE_TRANSFORM2D: "Transform2D", TYPE_VECTOR4: "Vector4", TYPE_VECTOR4I: "Vector4i",
	TYPE_PLANE: "Plane", TYPE_QUATERNION: "Quaternion", TYPE_AABB: "AABB", TYPE_BASIS: "Basis",
	TYPE_TRANSFORM3D: "Transform3D", TYPE_PROJECTION: "Projection", TYPE_COLOR: "Color",
	TYPE_STRING_NAME: "StringName", TYPE_NODE_PATH: "NodePath", TYPE_RID: "RID",
	TYPE_OBJECT: "Object", TYPE_CALLABLE: "Callable", TYPE_SIGNAL: "Signal",
	TYPE_DICTIONARY: "Dictionary", TYPE_ARRAY: "Array",
	TYPE_PACKED_BYTE_ARRAY: "PackedByteArray", TYPE_PACKED_INT32_ARRAY: "PackedInt32Array",
	TYPE_PACKED_INT64_ARRAY: "PackedInt64Array", TYPE_PACKED_FLOAT32_ARRAY: "PackedFloat32Array",
	TYPE_PACKED_FLOAT64_ARRAY: "PackedFloat64Array", TYPE_PACKED_STRING_ARRAY: "PackedStringArray",
	TYPE_PACKED_VECTOR2_ARRAY: "PackedVector2Array", TYPE_PACKED_VECTOR3_ARRAY: "PackedVector3Array",
	TYPE_PACKED_COLOR_ARRAY: "PackedColorArray",
}
# The element type of each packed array (PackedVector4Array, 4.3+, is left out: naming its
# constant would not compile on 4.0-4.2).
const _PACKED_ELEMENT: Dictionary = {
	TYPE_PACKED_BYTE_ARRAY: TYPE_INT,
	TYPE_PACKED_INT32_ARRAY: TYPE_INT,
	TYPE_PACKED_INT64_ARRAY: TYPE_INT,
	TYPE_PACKED_FLOAT32_ARRAY: TYPE_FLOAT,
	TYPE_PACKED_FLOAT64_ARRAY: TYPE_FLOAT,
	TYPE_PACKED_STRING_ARRAY: TYPE_STRING,
	TYPE_PACKED_VECTOR2_ARRAY: TYPE_VECTOR2,
	TYPE_PACKED_VECTOR3_ARRAY: TYPE_VECTOR3,
	TYPE_PACKED_COLOR_ARRAY: TYPE_COLOR,
}


# One capture job at a time: screenshot or record.
class CaptureJob:
	var id: Variant = null
	var paths: Array = []
	var interval_us: int = 0
	var next_us: int = 0
	var frames: Array = []
	var start_us: int = 0
	var raw_path: String = ""  # a screenshot's pixels, as they are, for the server's preview
	var low_processor: bool = false  # the project's redraw policy, given back when done


# One input command: its events, applied in order, one event (or one frame of waiting) a frame.
class InputJob:
	var id: Variant = null
	var queue: Array = []
	var wait: int = 0
	var until: float = -1.0  # a wait in game seconds: the game time it ends at
	var mark: float = -1.0  # the game time its last event went in (-1: unknown, now)
	var applied: int = 0
	var last_mouse: Vector2 = Vector2()


var _peer: StreamPeerTCP = StreamPeerTCP.new()
var _port: int = 0
var _scene: String = ""
var _phase: String = "connecting"  # connecting, loading, serving, closing
var _started_ms: int = 0
var _inbox: PackedByteArray = PackedByteArray()
var _headless: bool = false
# Headless Godot before 4.4 drops the events Input dispatches (DisplayServerHeadless has no input
# callback until godotengine/godot#92806): there they are also pushed to the root viewport.
var _push_to_viewport: bool = false
var _load_error: String = ""
var _load_frames: int = 0
var _job: CaptureJob = null
# Stepping: frames left to run before pausing again, and the command to answer then.
var _stepping: bool = false
var _step_left: int = 0
var _step_id: Variant = null
var _inputs: Array = []
var _decode_error: String = ""
# Game time (the process steps' delta the tree ran), the frame rate's samples, and the
# game-time waits ("after") still running: see the end of this file.
var _game_time: float = 0.0
var _last_delta: float = 0.0
var _frames_seen: int = 0
var _tick_us: int = 0
var _rate_us: Array[int] = []
var _rate_frames: Array[int] = []
var _timers: Array = []


func _initialize() -> void:
	Engine.max_fps = 60
	_headless = DisplayServer.get_name() == "headless"
	var info: Dictionary = Engine.get_version_info()
	var major: int = _as_int(info.get("major", 4), 4)
	var minor: int = _as_int(info.get("minor", 0), 0)
	_push_to_viewport = _headless and major == 4 and minor < 4
	var port: String = OS.get_environment(PORT_ENV)
	if port.is_valid_int():
		_port = port.to_int()
	if _port <= 0 or _port > 65535:
		printerr("godot-mcp bridge: missing " + PORT_ENV)
		quit(2)
		return
	_scene = OS.get_environment(SCENE_ENV)
	if _scene != "" and not _inside_res(_scene):
		_load_error = "scene %s is not a res:// path inside the project" % _scene
	if _scene == "":
		_scene = str(ProjectSettings.get_setting("application/run/main_scene", ""))
	_started_ms = Time.get_ticks_msec()
	var err: int = _peer.connect_to_host("127.0.0.1", _port)
	if err != OK:
		printerr("godot-mcp bridge: could not connect to the server (error %d)" % err)
		_phase = "closing"
		quit(3)


# MainLoop._process: called once a frame, before the scene tree processes its nodes (the role of
# Godot 3's SceneTree._idle in bridge3.gd).
func _process(delta: float) -> bool:
	_tick(delta)
	if _phase == "closing":
		return false
	var _poll_error: int = _peer.poll()
	var status: int = _peer.get_status()
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
		elif (status == StreamPeerTCP.STATUS_ERROR
				or Time.get_ticks_msec() - _started_ms > CONNECT_TIMEOUT_MS):
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
		pass
	elif _scene == "":
		_load_error = "the project has no main scene"
	elif not ResourceLoader.exists(_scene):
		_load_error = "scene %s does not exist" % _scene
	else:
		var err: int = change_scene_to_file(_scene)
		if err != OK:
			_load_error = "scene %s failed to load (error %d)" % [_scene, err]
	if _load_error != "":
		_phase = "serving"
		_send_ready()


func _send_ready() -> void:
	var loaded: bool = _load_error == "" and current_scene != null
	if _load_error == "" and not loaded:
		_load_error = "scene %s failed to load" % _scene
	var window_size: Vector2i = root.size
	_send({
		"type": "ready",
		"scene": _scene,
		"loaded": loaded,
		"error": _load_error,
		"width": window_size.x,
		"height": window_size.y,
	})


func _read_commands() -> void:
	var available: int = _peer.get_available_bytes()
	if available > 0:
		var got: Array = _peer.get_data(available)
		var got_error: int = _as_int(got[0], FAILED)
		if got_error == OK:
			var data: PackedByteArray = got[1]
			_inbox.append_array(data)
	while _phase != "closing":  # nothing after quit is handled
		var newline: int = _inbox.find(10)
		if newline < 0:
			return
		var line: String = _inbox.slice(0, newline).get_string_from_utf8()
		_inbox = _inbox.slice(newline + 1)
		if line.strip_edges() != "":
			_handle(line)


func _handle(line: String) -> void:
	var parsed: Variant = JSON.parse_string(line)
	if typeof(parsed) != TYPE_DICTIONARY:
		_send({"id": null, "ok": false, "error": "invalid_argument", "message": "bad command line"})
		return
	var cmd: Dictionary = parsed
	var id: Variant = _id_of(cmd.get("id"))
	var name: String = str(cmd.get("cmd", ""))
	if name == "quit":
		_send({"id": id, "ok": true})
		_close(0)
	elif name == "ping":
		# Marker lines on stderr first: once the server reads them, every line printed before
		# is in its log.
		var marks: Array = _as_array(cmd.get("marks", []))
		var m: int = 0
		while m < marks.size():
			printerr("godot-mcp-mark " + str(marks[m]))
			m += 1
		_send({"id": id, "ok": true, "fps": _rate(), "time": _game_time,
			"frame": Engine.get_process_frames()})
	elif name == "screenshot" or name == "record":
		_begin_capture(id, name, cmd)
	elif name == "tree":
		_cmd_tree(id, cmd)
	elif name == "time":
		_cmd_time(id, cmd)
	elif name == "input":
		_cmd_input(id, cmd)
	elif name == "get":
		_cmd_get(id, cmd)
	elif name == "set":
		_cmd_set(id, cmd)
	elif name == "call":
		_cmd_call(id, cmd)
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


# The project's scripts the running game uses: those of every node in the tree and their
# bases, sorted.
func _loaded_scripts() -> Array:
	var found: Dictionary = {}
	var todo: Array = [root]
	while not todo.is_empty():
		var node: Node = todo.pop_back()
		var script: Script = node.get_script()
		while script != null:
			var path: String = script.resource_path
			if path.begins_with("res://") and path.ends_with(".gd"):
				found[path] = true
			script = script.get_base_script()
		todo.append_array(node.get_children())
	var out: Array = found.keys()
	out.sort()
	return out


# Each script read again from its file and recompiled in place; its instances keep their
# members. The server checked that every one parses before asking.
func _cmd_reload(id: Variant, paths: Variant) -> void:
	if typeof(paths) != TYPE_ARRAY:
		_send({"id": id, "ok": false, "error": "invalid_argument", "message": "paths must be a list"})
		return
	var done: Array = []
	var items: Array = paths
	var i: int = 0
	while i < items.size():
		var path: String = str(items[i])
		i += 1
		var bad: bool = not path.begins_with("res://") or path.contains("..") or not path.ends_with(".gd")
		var script: GDScript = null if bad else load(path)
		if bad or not (script is GDScript) or not FileAccess.file_exists(path):
			_send({"id": id, "ok": false, "error": "invalid_argument",
				"message": "%s is not a script of the project" % path})
			return
		script.source_code = FileAccess.get_file_as_string(path)
		var err: int = script.reload(true)
		if err != OK:
			_send({"id": id, "ok": false, "error": "failed",
				"message": "%s could not be reloaded (error %d)" % [path, err]})
			return
		done.append(path)
	done.sort()
	_send({"id": id, "ok": true, "reloaded": done})


# The engine's own performance monitors, read at once; draw calls are null where nothing draws.
func _cmd_perf(id: Variant) -> void:
	var draws: Variant = null
	if not _headless:
		draws = int(Performance.get_monitor(Performance.RENDER_TOTAL_DRAW_CALLS_IN_FRAME))
	_send({"id": id, "ok": true,
		"fps": _rate(),
		"frame_ms": Performance.get_monitor(Performance.TIME_PROCESS) * 1000.0,
		"physics_ms": Performance.get_monitor(Performance.TIME_PHYSICS_PROCESS) * 1000.0,
		"memory_static_bytes": int(Performance.get_monitor(Performance.MEMORY_STATIC)),
		"objects": int(Performance.get_monitor(Performance.OBJECT_COUNT)),
		"nodes": int(Performance.get_monitor(Performance.OBJECT_NODE_COUNT)),
		"orphan_nodes": int(Performance.get_monitor(Performance.OBJECT_ORPHAN_NODE_COUNT)),
		"draw_calls": draws,
		"frame": Engine.get_process_frames()})


func _fail(id: Variant, error: String, message: String) -> void:
	_send({"id": id, "ok": false, "error": error, "message": message})


# JSON.parse_string reads every number as a float: give integral ids back as ints.
func _id_of(value: Variant) -> Variant:
	if typeof(value) == TYPE_FLOAT:
		var f: float = value
		if not is_nan(f) and not is_inf(f) and f == float(int(f)):
			return int(f)
	return value


# -- scene tree -------------------------------------------------------------------------------

# The tree from a root: depth-first, within depth, the nodes the filters match (all without
# one). With collapse, a run of 4 or more listed siblings of one class and script, none with
# listed nodes below it, is one entry {path, class, script?, count, last}. total counts nodes.
func _cmd_tree(id: Variant, cmd: Dictionary) -> void:
	var root_path: String = str(cmd.get("root", "/root"))
	var start: Node = root.get_node_or_null(NodePath(root_path))
	if start == null:
		_fail(id, "not_found", "no node at %s" % root_path)
		return
	var depth: int = _as_int(cmd.get("depth", 6), 6)
	var max_nodes: int = _as_int(cmd.get("max_nodes", 300), 300)
	var collapse: bool = _as_bool(cmd.get("collapse", false), false)
	var filters: Dictionary = {}
	var keys: Array = ["name", "class", "group", "script"]
	var k: int = 0
	while k < keys.size():
		var given: Variant = cmd.get(keys[k])
		if typeof(given) == TYPE_STRING and str(given) != "":
			filters[keys[k]] = str(given)
		k += 1
	var classes: Dictionary = _tree_script_classes() if filters.has("class") else {}
	# Every matching node in order, and whether a listed node lies below it.
	var found: Array = []
	var below: Array = []
	var stack: Array = [[start, 0, -1]]
	while not stack.is_empty():
		var item: Array = stack.pop_back()
		var node: Node = item[0]
		var level: int = item[1]
		var above: int = item[2]
		if filters.is_empty() or _tree_matches(node, filters, classes):
			if above >= 0:
				below[above] = true
			above = found.size()
			found.append(node)
			below.append(false)
		if level < depth:
			# Internal children (the ones built-in controls make for themselves) included.
			var i: int = node.get_child_count(true) - 1
			while i >= 0:
				stack.append([node.get_child(i, true), level + 1, above])
				i -= 1
	if found.is_empty() and filters.has("class"):
		var wanted: String = str(filters["class"])
		if not _tree_class_known(wanted, classes):
			_fail(id, "invalid_argument",
				"class %s is neither an engine class nor a class_name of the project" % wanted)
			return
	var nodes: Array = []
	var at: int = 0
	while at < found.size() and nodes.size() < max_nodes:
		var node: Node = found[at]
		var end: int = at + 1
		if collapse and not below[at]:
			while end < found.size() and not below[end]:
				var sibling: Node = found[end]
				if not _tree_alike(node, sibling):
					break
				end += 1
		if end - at < 4:
			end = at + 1
		var entry: Dictionary = {"path": str(node.get_path()), "class": node.get_class()}
		if end - at == 1:
			entry["name"] = str(node.name)
			entry["children"] = node.get_child_count(true)
		else:
			var last: Node = found[end - 1]
			entry["count"] = end - at
			entry["last"] = str(last.get_path())
		var node_script: Script = node.get_script()
		if node_script != null and node_script.resource_path != "":
			entry["script"] = node_script.resource_path
		nodes.append(entry)
		at = end
	var scene: Variant = null
	if current_scene != null:
		scene = str(current_scene.get_path())
	_send({"id": id, "ok": true, "nodes": nodes, "total": found.size(),
		"truncated": at < found.size(), "current_scene": scene})


func _tree_matches(node: Node, filters: Dictionary, classes: Dictionary) -> bool:
	if filters.has("name") and not str(node.name).match(str(filters["name"])):
		return false
	if filters.has("group") and not node.is_in_group(StringName(str(filters["group"]))):
		return false
	var node_script: Script = node.get_script()
	if filters.has("class"):
		var wanted: String = str(filters["class"])
		if not node.is_class(wanted) and not _tree_script_chain_has(node_script, "class", wanted, classes):
			return false
	if filters.has("script"):
		if not _tree_script_chain_has(node_script, "script", str(filters["script"]), classes):
			return false
	return true


# Whether a script or one it extends has the path, or the class_name (the script's global name,
# or the project's global class list where the engine cannot say it).
func _tree_script_chain_has(scr: Script, what: String, wanted: String, classes: Dictionary) -> bool:
	var seen: int = 0
	while scr != null and seen < 64:
		var path: String = scr.resource_path
		if what == "script" and path == wanted:
			return true
		if what == "class":
			var global_name: String = ""
			if scr.has_method("get_global_name"):
				global_name = str(scr.call("get_global_name"))
			if global_name == "" and path != "":
				global_name = str(classes.get(path, ""))
			if global_name == wanted:
				return true
		scr = scr.get_base_script()
		seen += 1
	return false


func _tree_script_classes() -> Dictionary:
	var out: Dictionary = {}
	var listed: Array[Dictionary] = ProjectSettings.get_global_class_list()
	var i: int = 0
	while i < listed.size():
		var entry: Dictionary = listed[i]
		out[str(entry.get("path", ""))] = str(entry.get("class", ""))
		i += 1
	return out


func _tree_class_known(wanted: String, classes: Dictionary) -> bool:
	return ClassDB.class_exists(StringName(wanted)) or classes.values().has(wanted)


func _tree_alike(first: Node, other: Node) -> bool:
	return other.get_parent() == first.get_parent() and other.get_class() == first.get_class() \
		and other.get_script() == first.get_script()


# -- time -------------------------------------------------------------------------------------

func _time_reply(id: Variant) -> void:
	_send({"id": id, "ok": true, "paused": paused, "time_scale": Engine.time_scale,
		"frame": Engine.get_process_frames()})


func _cmd_time(id: Variant, cmd: Dictionary) -> void:
	var action: String = str(cmd.get("action", ""))
	if _stepping:
		_fail(id, "failed", "a step is still running")
		return
	if action == "pause":
		paused = true
	elif action == "resume":
		paused = false
	elif action == "scale":
		Engine.time_scale = _as_float(cmd.get("time_scale", 1.0), 1.0)
	elif action == "step":
		# Unpaused now, this frame's processing is the first step; paused again before the
		# processing of the frame after the last one.
		_step_left = _as_int(cmd.get("frames", 1), 1)
		if _step_left < 1:
			_step_left = 1
		_step_id = id
		_stepping = true
		paused = false
		return
	else:
		_fail(id, "invalid_argument", "unknown time action")
		return
	_time_reply(id)


# The server stopped waiting for command `target`: drop it, so nothing queued behind it waits
# for it (an input job, a frame wait, a capture, a step: a step ends paused, as it would have).
func _cmd_cancel(id: Variant, target: Variant) -> void:
	var dropped: bool = false
	var i: int = 0
	while i < _inputs.size():
		var job: InputJob = _inputs[i]
		if job.id == target:
			_inputs.remove_at(i)
			dropped = true
			break
		i += 1
	if _job != null and _job.id == target:
		_drop_capture()
		dropped = true
	if _stepping and _step_id == target:
		_stepping = false
		_step_id = null
		_step_left = 0
		paused = true
		dropped = true
	if _drop_timer(target):
		dropped = true
	if dropped and not _inputs.is_empty():
		_advance_inputs()
	_send({"id": id, "ok": true, "cancelled": dropped})


func _advance_step() -> void:
	if not _stepping:
		return
	_step_left -= 1
	if _step_left <= 0:
		paused = true
		_stepping = false
		var step_id: Variant = _step_id
		_step_id = null
		_time_reply(step_id)


# -- input ------------------------------------------------------------------------------------

func _cmd_input(id: Variant, cmd: Dictionary) -> void:
	var events: Array = _as_array(cmd.get("events", []))
	var i: int = 0
	while i < events.size():
		var ev: Dictionary = _as_dict(events[i])
		var kind: String = str(ev.get("type", ""))
		if not _EVENT_KINDS.has(kind) and not _JOYPAD_KINDS.has(kind):
			_fail(id, "invalid_argument", "unknown input event type %s" % kind)
			return
		if kind == "action" and not InputMap.has_action(str(ev.get("action", ""))):
			_fail(id, "invalid_argument", "unknown action %s; the project's actions: %s"
				% [str(ev.get("action", "")), _project_actions()])
			return
		if kind == "key" and OS.find_keycode_from_string(str(ev.get("key", ""))) == KEY_NONE:
			_fail(id, "invalid_argument", "unknown key name %s" % str(ev.get("key", "")))
			return
		if kind == "mouse_button" and not _BUTTONS.has(str(ev.get("button", "left"))):
			_fail(id, "invalid_argument", "unknown mouse button %s" % str(ev.get("button", "")))
			return
		i += 1
	var job: InputJob = InputJob.new()
	job.id = id
	i = 0
	while i < events.size():
		job.queue.append(_as_dict(events[i]))
		i += 1
	_inputs.append(job)
	if _inputs.size() == 1:
		_advance_inputs()  # the first event goes in this frame


func _project_actions() -> String:
	var actions: Array = InputMap.get_actions()
	var listed: String = ""
	var i: int = 0
	while i < actions.size():
		var action: String = str(actions[i])
		if not action.begins_with("ui_"):
			if listed != "":
				listed += ", "
			listed += action
		i += 1
	return listed


func _advance_inputs() -> void:
	while not _inputs.is_empty():
		var job: InputJob = _inputs[0]
		if job.wait > 0:
			job.wait -= 1
			return
		if job.until >= 0.0:
			if not _reached(job.until):
				return
			job.until = -1.0
		if job.queue.is_empty():
			_inputs.remove_at(0)
			_send({"id": job.id, "ok": true, "applied": job.applied,
				"frame": Engine.get_process_frames()})
			continue
		var ev: Dictionary = job.queue.pop_front()
		var kind: String = str(ev.get("type", ""))
		var is_release: bool = _as_bool(ev.get("_release", false), false)
		if kind == "wait" and ev.has("seconds"):
			# Game seconds after the event before it (a tap's press), or after what came
			# before: waits in a row add up.
			var since: float = job.mark if job.mark >= 0.0 else _game_time
			job.until = since + maxf(_as_float(ev.get("seconds", 0.0), 0.0), 0.0)
			job.mark = job.until
			job.applied += 1
			continue
		if kind == "wait":
			job.mark = -1.0
			job.wait = _as_int(ev.get("frames", 1), 1)
			if not is_release:
				job.applied += 1
			continue
		var tap: bool = (not ev.has("pressed")
			and (kind == "action" or kind == "key" or kind == "mouse_button"
				or kind == "joypad_button"))
		var produced: Array = _events_of(ev, job)
		var k: int = 0
		while k < produced.size():
			var event: InputEvent = produced[k]
			Input.parse_input_event(event)
			# Input buffers what it is given until the platform flushes it; flushing here delivers
			# it this frame, before the nodes process (and at all on a headless 4.0-4.3).
			Input.flush_buffered_events()
			if _push_to_viewport:
				root.push_input(event)
			if event is InputEventAction and event.is_pressed():
				_press_shortcuts(event)
			k += 1
		if not is_release:
			job.applied += 1
			job.mark = _game_time
		if tap:
			var release: Dictionary = ev.duplicate()
			release["pressed"] = false
			release["_release"] = true
			job.queue.push_front(release)
		if job.queue.is_empty():  # the last event is in: answer now, not a frame later
			_inputs.remove_at(0)
			_send({"id": job.id, "ok": true, "applied": job.applied,
				"frame": Engine.get_process_frames()})
			continue
		return


func _events_of(ev: Dictionary, job: InputJob) -> Array:
	var kind: String = str(ev.get("type", ""))
	var pressed: bool = _as_bool(ev.get("pressed", true), true)
	if kind == "action":
		var a: InputEventAction = InputEventAction.new()
		a.action = str(ev.get("action", ""))
		a.pressed = pressed
		a.strength = _as_float(ev.get("strength", 1.0), 1.0)
		return [a]
	if kind == "key":
		var key_name: String = str(ev.get("key", ""))
		var k: InputEventKey = InputEventKey.new()
		# The project's input map may name a key by keycode, physical keycode or (4.2+) label.
		k.keycode = OS.find_keycode_from_string(key_name)
		k.physical_keycode = OS.find_keycode_from_string(key_name)
		k.set("key_label", OS.find_keycode_from_string(key_name))
		k.pressed = pressed
		k.shift_pressed = _as_bool(ev.get("shift", false), false)
		k.ctrl_pressed = _as_bool(ev.get("ctrl", false), false)
		k.alt_pressed = _as_bool(ev.get("alt", false), false)
		k.meta_pressed = _as_bool(ev.get("meta", false), false)
		return [k]
	if _JOYPAD_KINDS.has(kind):
		return [_joypad_event(ev, pressed)]
	var at: Vector2 = Vector2(_as_float(ev.get("x", 0), 0.0), _as_float(ev.get("y", 0), 0.0))
	if kind == "mouse_button":
		var b: InputEventMouseButton = InputEventMouseButton.new()
		b.button_index = _BUTTONS.get(str(ev.get("button", "left")), MOUSE_BUTTON_LEFT)
		b.position = at
		b.global_position = at
		b.pressed = pressed
		b.double_click = _as_bool(ev.get("double_click", false), false)
		job.last_mouse = at
		return [b]
	if kind == "mouse_motion":
		var m: InputEventMouseMotion = InputEventMouseMotion.new()
		m.position = at
		m.global_position = at
		m.relative = at - job.last_mouse
		# The buttons held now, so a press, motion, release sequence drags.
		m.set("button_mask", Input.get_mouse_button_mask())
		job.last_mouse = at
		return [m]
	if kind == "text":
		var out: Array = []
		var text: String = str(ev.get("text", ""))
		var i: int = 0
		while i < text.length():
			var down: InputEventKey = InputEventKey.new()
			down.unicode = text.unicode_at(i)
			down.pressed = true
			var up: InputEventKey = InputEventKey.new()
			up.unicode = text.unicode_at(i)
			up.pressed = false
			out.append(down)
			out.append(up)
			i += 1
		return out
	return []


# Godot 4 offers only key, joypad-button and InputEventShortcut events to `_shortcut_input`
# (Viewport._push_unhandled_input_internal), never an InputEventAction, so a button whose shortcut
# is the action would miss the press a player's key makes. Unless a node handled the action, each
# Shortcut in the tree (a button's, a popup menu item's) that the action matches gets an
# InputEventShortcut holding that very Shortcut (Shortcut.matches_event takes it by identity),
# the last node in tree order first, as the engine walks its shortcut group, until one takes it.
# That event is not an action (`is_action` is false), so `_input` and `_unhandled_input` count no
# second press. docs/godot.md, "Action events and shortcuts".
func _press_shortcuts(action: InputEvent) -> void:
	if root.is_input_handled():
		return
	var shortcuts: Array = []  # tree order: find_children walks pre-order
	var nodes: Array = root.find_children("*", "", true, false)
	var i: int = 0
	while i < nodes.size():
		var node: Node = nodes[i]
		if node is BaseButton:
			var button: BaseButton = nodes[i]
			_add_shortcut(shortcuts, button.shortcut, action)
		if node is MenuButton:  # its popup is an internal child
			var menu_button: MenuButton = nodes[i]
			_add_menu_shortcuts(shortcuts, menu_button.get_popup(), action)
		elif node is PopupMenu:
			var menu: PopupMenu = nodes[i]
			_add_menu_shortcuts(shortcuts, menu, action)
		i += 1
	i = shortcuts.size() - 1
	while i >= 0:
		var shortcut: Shortcut = shortcuts[i]
		var press: InputEventShortcut = InputEventShortcut.new()
		press.shortcut = shortcut
		root.push_input(press)
		if root.is_input_handled():
			return
		i -= 1


func _add_menu_shortcuts(shortcuts: Array, menu: PopupMenu, action: InputEvent) -> void:
	var item: int = 0
	while item < menu.item_count:
		_add_shortcut(shortcuts, menu.get_item_shortcut(item), action)
		item += 1


func _add_shortcut(shortcuts: Array, shortcut: Shortcut, action: InputEvent) -> void:
	if shortcut != null and not shortcuts.has(shortcut) and shortcut.matches_event(action):
		shortcuts.append(shortcut)


# A button or an axis of the first joypad (device 0).
func _joypad_event(ev: Dictionary, pressed: bool) -> InputEvent:
	if str(ev.get("type", "")) == "joypad_button":
		var b: InputEventJoypadButton = InputEventJoypadButton.new()
		b.set("button_index", _as_int(ev.get("button", 0), 0))
		b.pressed = pressed
		return b
	var m: InputEventJoypadMotion = InputEventJoypadMotion.new()
	m.set("axis", _as_int(ev.get("axis", 0), 0))
	m.axis_value = _as_float(ev.get("value", 0.0), 0.0)
	return m


# -- node values: get, set, call, as JSON values (docs/godot.md) -------------

func _node_at(id: Variant, cmd: Dictionary) -> Node:
	var path: String = str(cmd.get("path", ""))
	var node: Node = null
	if path != "":
		node = root.get_node_or_null(NodePath(path))
	if node == null:
		_fail(id, "not_found", "no node at %s" % path)
	return node


# name -> property info of every real property of the node (categories and groups left out).
func _known_properties(node: Node) -> Dictionary:
	var known: Dictionary = {}
	var listed: Array = node.get_property_list()
	var skip: int = PROPERTY_USAGE_CATEGORY | PROPERTY_USAGE_GROUP | PROPERTY_USAGE_SUBGROUP
	var i: int = 0
	while i < listed.size():
		var info: Dictionary = listed[i]
		if (_as_int(info.get("usage", 0), 0) & skip) == 0:
			known[str(info.get("name", ""))] = info
		i += 1
	return known


# The script's variables, then the node's stored properties, each once.
func _default_properties(node: Node) -> Array:
	var names: Array = []
	var seen: Dictionary = {}
	var node_script: Script = node.get_script()
	if node_script != null:
		var script_listed: Array = node_script.get_script_property_list()
		var i: int = 0
		while i < script_listed.size():
			var info: Dictionary = script_listed[i]
			var pname: String = str(info.get("name", ""))
			var usage: int = _as_int(info.get("usage", 0), 0)
			if (usage & PROPERTY_USAGE_SCRIPT_VARIABLE) != 0 and not seen.has(pname):
				seen[pname] = true
				names.append(pname)
			i += 1
	var listed: Array = node.get_property_list()
	var j: int = 0
	while j < listed.size():
		var node_info: Dictionary = listed[j]
		var node_pname: String = str(node_info.get("name", ""))
		var node_usage: int = _as_int(node_info.get("usage", 0), 0)
		if (node_usage & PROPERTY_USAGE_STORAGE) != 0 and not seen.has(node_pname):
			seen[node_pname] = true
			names.append(node_pname)
		j += 1
	return names


func _cmd_get(id: Variant, cmd: Dictionary) -> void:
	var node: Node = _node_at(id, cmd)
	if node == null:
		return
	var asked: Array = _as_array(cmd.get("properties", []))
	var names: Array = asked
	var truncated: bool = false
	if asked.is_empty():
		names = _default_properties(node)
		if names.size() > MAX_DEFAULT_PROPERTIES:
			truncated = true
			names = names.slice(0, MAX_DEFAULT_PROPERTIES)
	else:
		var known: Dictionary = _known_properties(node)
		var i: int = 0
		while i < asked.size():
			var wanted: String = str(asked[i])
			if not known.has(wanted):
				_fail(id, "invalid_argument", "unknown property %s on %s" % [wanted, node.get_class()])
				return
			i += 1
	var values: Dictionary = {}
	var j: int = 0
	while j < names.size():
		var pname: String = str(names[j])
		values[pname] = _encode(node.get(pname), 0)
		j += 1
	_send({"id": id, "ok": true, "class": node.get_class(), "values": values,
		"truncated": truncated})


func _cmd_set(id: Variant, cmd: Dictionary) -> void:
	var node: Node = _node_at(id, cmd)
	if node == null:
		return
	var known: Dictionary = _known_properties(node)
	var wanted: Dictionary = _as_dict(cmd.get("values", {}))
	var keys: Array = wanted.keys()
	var decoded: Dictionary = {}
	var i: int = 0
	while i < keys.size():
		var pname: String = str(keys[i])
		if not known.has(pname):
			_fail(id, "invalid_argument", "unknown property %s on %s" % [pname, node.get_class()])
			return
		var current: Variant = node.get(pname)
		# The type to match: the current value's, or while that is null the declared one.
		var expected: int = typeof(current)
		if expected == TYPE_NIL:
			var info: Dictionary = known[pname]
			expected = _as_int(info.get("type", TYPE_NIL), TYPE_NIL)
		_decode_error = ""
		var value: Variant = _conform(_decode(wanted[keys[i]]), expected, current)
		if _decode_error != "":
			_fail(id, "invalid_argument", "value for %s: %s" % [pname, _decode_error])
			return
		if not _fits(value, expected):
			_fail(id, "invalid_argument", "wrong type for %s: expected %s, got %s"
				% [pname, _expected_name(expected, current), _type_name(value)])
			return
		decoded[pname] = value
		i += 1
	var back: Dictionary = {}
	var names: Array = decoded.keys()
	var refused: Array = []
	var j: int = 0
	while j < names.size():
		var set_name: String = str(names[j])
		node.set(set_name, decoded[set_name])
		var now: Variant = _encode(node.get(set_name), 0)
		back[set_name] = now
		# A write the property does not take (a setter that ignores or alters it, a typed
		# container it refuses) is never answered ok: what reads back must be what was sent.
		var sent: Variant = _encode(decoded[set_name], 0)
		if not _same(now, sent):
			refused.append("%s did not take %s: it reads back %s"
				% [set_name, _short(sent), _short(now)])
		j += 1
	if not refused.is_empty():
		var others: String = ""
		if refused.size() < names.size():
			others = " (the other values were set)"
		_fail(id, "invalid_argument", "; ".join(PackedStringArray(refused)) + others)
		return
	_send({"id": id, "ok": true, "values": back})


# Two encoded values are the same: numbers to a millionth (float32 storage rounds them).
func _same(a: Variant, b: Variant) -> bool:
	var ka: int = typeof(a)
	var kb: int = typeof(b)
	if ka == TYPE_INT and kb == TYPE_INT:
		var ia: int = a
		var ib: int = b
		return ia == ib
	if (ka == TYPE_INT or ka == TYPE_FLOAT) and (kb == TYPE_INT or kb == TYPE_FLOAT):
		var x: float = _as_float(a, 0.0)
		var y: float = _as_float(b, 0.0)
		return absf(x - y) <= 0.000001 * maxf(1.0, absf(y))
	if ka != kb:
		return false
	if ka == TYPE_ARRAY:
		var la: Array = a
		var lb: Array = b
		if la.size() != lb.size():
			return false
		var i: int = 0
		while i < la.size():
			if not _same(la[i], lb[i]):
				return false
			i += 1
		return true
	if ka == TYPE_DICTIONARY:
		var da: Dictionary = a
		var db: Dictionary = b
		if da.size() != db.size():
			return false
		var keys: Array = da.keys()
		var k: int = 0
		while k < keys.size():
			if not db.has(keys[k]) or not _same(da[keys[k]], db[keys[k]]):
				return false
			k += 1
		return true
	return a == b


# An encoded value as a short text for a message.
func _short(v: Variant) -> String:
	var text: String = JSON.stringify(v)
	if text.length() > 200:
		return text.substr(0, 200) + "…"
	return text


func _cmd_call(id: Variant, cmd: Dictionary) -> void:
	var node: Node = _node_at(id, cmd)
	if node == null:
		return
	var method: String = str(cmd.get("method", ""))
	if method == "" or not node.has_method(method):
		_fail(id, "invalid_argument", "unknown method %s on %s" % [method, node.get_class()])
		return
	var raw: Array = _as_array(cmd.get("args", []))
	# The method's signature, when it is listed: how many arguments, of which types.
	var from_script: bool = false
	var info: Dictionary = {}
	var node_script: Script = node.get_script()
	if node_script != null:
		info = _find_method(node_script.get_script_method_list(), method)
		from_script = not info.is_empty()
	if info.is_empty():
		info = _find_method(node.get_method_list(), method)
	var arg_infos: Array = _as_array(info.get("args", []))
	if not info.is_empty():
		var vararg: bool = (_as_int(info.get("flags", 0), 0) & METHOD_FLAG_VARARG) != 0
		var most: int = arg_infos.size()
		# A script method's default arguments are not listed by every 4.x: only too many
		# arguments is refused there; the engine's own methods list theirs.
		var least: int = most - _as_array(info.get("default_args", [])).size()
		if from_script:
			least = 0
		if (raw.size() > most and not vararg) or raw.size() < least:
			_fail(id, "invalid_argument",
				"wrong number of arguments for %s: expected %d to %d, got %d"
				% [method, least, most, raw.size()])
			return
	var args: Array = []
	var i: int = 0
	while i < raw.size():
		var expected: int = TYPE_NIL
		if i < arg_infos.size():
			var arg_info: Dictionary = _as_dict(arg_infos[i])
			expected = _as_int(arg_info.get("type", TYPE_NIL), TYPE_NIL)
		_decode_error = ""
		var value: Variant = _conform(_decode(raw[i]), expected, null)
		if _decode_error != "":
			_fail(id, "invalid_argument", "argument %d: %s" % [i, _decode_error])
			return
		if not _fits(value, expected):
			_fail(id, "invalid_argument", "wrong type for argument %d of %s: expected %s, got %s"
				% [i, method, _kind_name(expected), _type_name(value)])
			return
		args.append(value)
		i += 1
	# The server's marks, printed to stderr around the call: the script errors it raises are
	# the lines between the two, complete once the second is read (bridge.py).
	var marks: Array = _as_array(cmd.get("marks", []))
	if marks.size() == 2:
		printerr("godot-mcp-mark " + str(marks[0]))
	var result: Variant = node.callv(method, args)
	if marks.size() == 2:
		printerr("godot-mcp-mark " + str(marks[1]))
	_send({"id": id, "ok": true, "result": _encode(result, 0)})


# The first entry named `method`: a script lists its own methods before its base script's.
func _find_method(methods: Array, method: String) -> Dictionary:
	var i: int = 0
	while i < methods.size():
		var info: Dictionary = _as_dict(methods[i])
		if str(info.get("name", "")) == method:
			return info
		i += 1
	return {}


func _fits(value: Variant, expected: int) -> bool:
	if expected == TYPE_NIL or typeof(value) == expected:
		return true
	return expected == TYPE_OBJECT and typeof(value) == TYPE_NIL


func _expected_name(expected: int, current: Variant) -> String:
	if typeof(current) == TYPE_OBJECT and is_instance_valid(current):
		var obj: Object = current
		return obj.get_class()
	return _kind_name(expected)


func _kind_name(kind: int) -> String:
	return str(_TYPE_NAMES.get(kind, "Variant"))


func _type_name(value: Variant) -> String:
	if typeof(value) == TYPE_OBJECT and is_instance_valid(value):
		var obj: Object = value
		return obj.get_class()
	return _kind_name(typeof(value))


# -- encoding: Godot value -> JSON ------------------------------------------------------

func _enc_float(f: float) -> Variant:
	if is_nan(f):
		return {"type": "float", "value": "nan"}
	if is_inf(f):
		if f > 0.0:
			return {"type": "float", "value": "inf"}
		return {"type": "float", "value": "-inf"}
	return f


func _encode(v: Variant, depth: int) -> Variant:
	var kind: int = typeof(v)
	if kind == TYPE_NIL or kind == TYPE_BOOL or kind == TYPE_INT:
		return v
	if kind == TYPE_FLOAT:
		var f: float = v
		return _enc_float(f)
	if kind == TYPE_STRING or kind == TYPE_STRING_NAME:
		var s: String = str(v)
		if s.length() > MAX_STRING:
			return {"type": "String", "truncated": true, "length": s.length(),
				"head": s.substr(0, MAX_STRING)}
		return s
	if kind == TYPE_VECTOR2:
		var v2: Vector2 = v
		return {"type": "Vector2", "x": _enc_float(v2.x), "y": _enc_float(v2.y)}
	if kind == TYPE_VECTOR2I:
		var v2i: Vector2i = v
		return {"type": "Vector2i", "x": v2i.x, "y": v2i.y}
	if kind == TYPE_VECTOR3:
		var v3: Vector3 = v
		return {"type": "Vector3", "x": _enc_float(v3.x), "y": _enc_float(v3.y), "z": _enc_float(v3.z)}
	if kind == TYPE_VECTOR3I:
		var v3i: Vector3i = v
		return {"type": "Vector3i", "x": v3i.x, "y": v3i.y, "z": v3i.z}
	if kind == TYPE_VECTOR4:
		var v4: Vector4 = v
		return {"type": "Vector4", "x": _enc_float(v4.x), "y": _enc_float(v4.y),
			"z": _enc_float(v4.z), "w": _enc_float(v4.w)}
	if kind == TYPE_VECTOR4I:
		var v4i: Vector4i = v
		return {"type": "Vector4i", "x": v4i.x, "y": v4i.y, "z": v4i.z, "w": v4i.w}
	if kind == TYPE_RECT2:
		var r: Rect2 = v
		return {"type": "Rect2", "x": _enc_float(r.position.x), "y": _enc_float(r.position.y),
			"w": _enc_float(r.size.x), "h": _enc_float(r.size.y)}
	if kind == TYPE_RECT2I:
		var ri: Rect2i = v
		return {"type": "Rect2i", "x": ri.position.x, "y": ri.position.y, "w": ri.size.x, "h": ri.size.y}
	if kind == TYPE_COLOR:
		var c: Color = v
		return {"type": "Color", "r": _enc_float(c.r), "g": _enc_float(c.g), "b": _enc_float(c.b),
			"a": _enc_float(c.a)}
	if kind == TYPE_TRANSFORM2D:
		var t2: Transform2D = v
		return {"type": "Transform2D", "x": _enc_vec2(t2.x), "y": _enc_vec2(t2.y),
			"origin": _enc_vec2(t2.origin)}
	if kind == TYPE_BASIS:
		var b: Basis = v
		return _enc_basis(b)
	if kind == TYPE_TRANSFORM3D:
		var t3: Transform3D = v
		return {"type": "Transform3D", "basis": _enc_basis(t3.basis), "origin": _enc_vec3(t3.origin)}
	if kind == TYPE_QUATERNION:
		var q: Quaternion = v
		return {"type": "Quaternion", "x": _enc_float(q.x), "y": _enc_float(q.y), "z": _enc_float(q.z),
			"w": _enc_float(q.w)}
	if kind == TYPE_NODE_PATH:
		return {"type": "NodePath", "path": str(v)}
	if kind == TYPE_OBJECT:
		if not is_instance_valid(v):
			return null
		var obj: Object = v
		var out: Dictionary = {"type": "Object", "class": obj.get_class()}
		if obj is Node:
			var n: Node = obj
			if n.is_inside_tree():
				out["path"] = str(n.get_path())
		elif obj is Resource:
			var res: Resource = obj
			if res.resource_path != "":
				out["path"] = res.resource_path
		return out
	if kind == TYPE_DICTIONARY:
		var d: Dictionary = v
		return _enc_dict(d, depth)
	if kind == TYPE_ARRAY or (kind >= TYPE_PACKED_BYTE_ARRAY and kind < TYPE_MAX):
		var arr: Array = v  # packed arrays convert to an Array here
		if depth >= MAX_DEPTH:
			return [{"type": "truncated", "remaining": arr.size()}]
		var items: Array = []
		var i: int = 0
		while i < arr.size():
			if i >= MAX_ITEMS:
				items.append({"type": "truncated", "remaining": arr.size() - i})
				break
			items.append(_encode(arr[i], depth + 1))
			i += 1
		return items
	return {"type": _kind_name(kind), "value": str(v)}


func _enc_vec2(v: Vector2) -> Array:
	return [_enc_float(v.x), _enc_float(v.y)]


func _enc_vec3(v: Vector3) -> Array:
	return [_enc_float(v.x), _enc_float(v.y), _enc_float(v.z)]


func _enc_basis(b: Basis) -> Dictionary:
	return {"type": "Basis", "x": _enc_vec3(b.x), "y": _enc_vec3(b.y), "z": _enc_vec3(b.z)}


func _enc_dict(d: Dictionary, depth: int) -> Variant:
	if depth >= MAX_DEPTH:
		return {"type": "truncated", "remaining": d.size()}
	var keys: Array = d.keys()
	var plain: bool = true
	var i: int = 0
	while i < keys.size():
		var key_kind: int = typeof(keys[i])
		if (key_kind != TYPE_STRING and key_kind != TYPE_STRING_NAME) or str(keys[i]) == "type":
			plain = false
			break
		i += 1
	var count: int = 0
	if plain:
		var out: Dictionary = {}
		while count < keys.size():
			if count >= MAX_ITEMS:
				out["…"] = {"type": "truncated", "remaining": keys.size() - count}
				break
			out[str(keys[count])] = _encode(d[keys[count]], depth + 1)
			count += 1
		return out
	var items: Array = []
	while count < keys.size():
		if count >= MAX_ITEMS:
			items.append({"type": "truncated", "remaining": keys.size() - count})
			break
		items.append([_encode(keys[count], depth + 1), _encode(d[keys[count]], depth + 1)])
		count += 1
	return {"type": "Dictionary", "items": items}


# -- decoding: JSON -> Godot value; either Godot version's type names are accepted --------

func _decode(v: Variant) -> Variant:
	var kind: int = typeof(v)
	if kind == TYPE_FLOAT:
		# JSON.parse_string reads every number as a float; the server tags the floats that are
		# integral (and the ints a double cannot hold), so a plain integral number is an int.
		var f: float = v
		if absf(f) <= 9007199254740992.0 and f == floorf(f):
			return int(f)
		return v
	if kind == TYPE_ARRAY:
		var src: Array = v
		var out: Array = []
		var i: int = 0
		while i < src.size():
			out.append(_decode(src[i]))
			i += 1
		return out
	if kind != TYPE_DICTIONARY:
		return v
	var d: Dictionary = v
	if not d.has("type"):
		var plain: Dictionary = {}
		var keys: Array = d.keys()
		var j: int = 0
		while j < keys.size():
			plain[keys[j]] = _decode(d[keys[j]])
			j += 1
		return plain
	var t: String = str(d.get("type", ""))
	if t == "Vector2":
		return Vector2(_num(d.get("x")), _num(d.get("y")))
	if t == "Vector2i":
		return Vector2i(_whole(d.get("x")), _whole(d.get("y")))
	if t == "Vector3":
		return Vector3(_num(d.get("x")), _num(d.get("y")), _num(d.get("z")))
	if t == "Vector3i":
		return Vector3i(_whole(d.get("x")), _whole(d.get("y")), _whole(d.get("z")))
	if t == "Vector4":
		return Vector4(_num(d.get("x")), _num(d.get("y")), _num(d.get("z")), _num(d.get("w")))
	if t == "Vector4i":
		return Vector4i(_whole(d.get("x")), _whole(d.get("y")), _whole(d.get("z")), _whole(d.get("w")))
	if t == "Rect2":
		return Rect2(_num(d.get("x")), _num(d.get("y")), _num(d.get("w")), _num(d.get("h")))
	if t == "Rect2i":
		return Rect2i(_whole(d.get("x")), _whole(d.get("y")), _whole(d.get("w")), _whole(d.get("h")))
	if t == "Color":
		return Color(_num(d.get("r")), _num(d.get("g")), _num(d.get("b")), _num(d.get("a", 1.0)))
	if t == "Transform2D":
		return Transform2D(_vec2(d.get("x")), _vec2(d.get("y")), _vec2(d.get("origin")))
	if t == "Basis":
		return Basis(_vec3(d.get("x")), _vec3(d.get("y")), _vec3(d.get("z")))
	if t == "Transform3D" or t == "Transform":
		var basis: Variant = _decode(d.get("basis", {}))
		if typeof(basis) != TYPE_BASIS:
			_decode_error = "a %s needs a Basis" % t
			return null
		var typed_basis: Basis = basis
		return Transform3D(typed_basis, _vec3(d.get("origin")))
	if t == "Quaternion" or t == "Quat":
		return Quaternion(_num(d.get("x")), _num(d.get("y")), _num(d.get("z")), _num(d.get("w")))
	if t == "NodePath":
		return NodePath(str(d.get("path", "")))
	if t == "int":
		var whole: Variant = d.get("value")
		if typeof(whole) == TYPE_STRING:
			return _parse_int(str(whole))
		return _whole(whole)
	if t == "float":
		var number: Variant = d.get("value")
		if typeof(number) == TYPE_FLOAT or typeof(number) == TYPE_INT:
			return _as_float(number, 0.0)
		var word: String = str(number)
		if word == "nan":
			return NAN
		if word == "inf":
			return INF
		if word == "-inf":
			return -INF
		_decode_error = "a float is nan, inf or -inf"
		return null
	if t == "Dictionary":
		var pairs: Array = _as_array(d.get("items", []))
		var out_dict: Dictionary = {}
		var k: int = 0
		while k < pairs.size():
			var pair: Array = _as_array(pairs[k])
			if pair.size() != 2:
				_decode_error = "Dictionary items are [key, value] pairs"
				return null
			out_dict[_decode(pair[0])] = _decode(pair[1])
			k += 1
		return out_dict
	if t == "Object":
		var where: String = str(d.get("path", ""))
		if where.begins_with("res://"):
			if not _inside_res(where):
				_decode_error = "an Object path must stay inside res://: %s" % where
				return null
			if not ResourceLoader.exists(where):
				_decode_error = "no resource at %s" % where
				return null
			return load(where)
		var found: Node = null
		if where != "":
			found = root.get_node_or_null(NodePath(where))
		if found == null:
			_decode_error = "no object at %s" % where
		return found
	if t == "String" or t == "truncated":
		_decode_error = "a truncated value cannot be sent back"
		return null
	_decode_error = "unknown type %s" % t
	return null


func _num(v: Variant) -> float:
	var kind: int = typeof(v)
	if kind == TYPE_FLOAT or kind == TYPE_INT:
		return _as_float(v, 0.0)
	if kind == TYPE_DICTIONARY:
		var special: Variant = _decode(v)
		if typeof(special) == TYPE_FLOAT or typeof(special) == TYPE_INT:
			return _as_float(special, 0.0)
	_decode_error = "expected a number"
	return 0.0


func _whole(v: Variant) -> int:
	var kind: int = typeof(v)
	if kind == TYPE_INT:
		var i: int = v
		return i
	if kind == TYPE_DICTIONARY:
		var tagged: Variant = _decode(v)
		if typeof(tagged) == TYPE_INT or typeof(tagged) == TYPE_FLOAT:
			return _whole(tagged)
	if kind == TYPE_FLOAT:
		var f: float = v
		if not is_nan(f) and not is_inf(f) and f == float(int(f)):
			return int(f)
	_decode_error = "expected an integer"
	return 0


# An int written in decimal digits (a sign allowed), exactly, in 64 bits; else a decode error.
func _parse_int(text: String) -> Variant:
	var negative: bool = text.begins_with("-")
	var digits: String = text
	if negative or text.begins_with("+"):
		digits = text.substr(1)
	if digits == "" or digits.length() > 19:
		_decode_error = "an int is at most 19 decimal digits"
		return null
	var n: int = 0  # accumulated negative, so that the most negative int fits
	var i: int = 0
	while i < digits.length():
		var d: int = digits.unicode_at(i) - 48
		if d < 0 or d > 9:
			_decode_error = "an int is decimal digits"
			return null
		if n < -922337203685477580 or (n == -922337203685477580 and d > 8):
			_decode_error = "an int must fit 64 bits"
			return null
		n = n * 10 - d
		i += 1
	if negative:
		return n
	if n == -9223372036854775807 - 1:
		_decode_error = "an int must fit 64 bits"
		return null
	return -n


func _vec2(v: Variant) -> Vector2:
	var a: Array = _as_array(v)
	if a.size() != 2:
		_decode_error = "expected a list of 2 numbers"
		return Vector2()
	return Vector2(_num(a[0]), _num(a[1]))


func _vec3(v: Variant) -> Vector3:
	var a: Array = _as_array(v)
	if a.size() != 3:
		_decode_error = "expected a list of 3 numbers"
		return Vector3()
	return Vector3(_num(a[0]), _num(a[1]), _num(a[2]))


# Bends a decoded value toward the type a property or argument has, where JSON cannot say it:
# numbers arrive as floats, Godot 3 names Vector2 what is a Vector2i here, packed and typed arrays
# arrive as lists. Values that cannot be bent are returned as they are (the caller's type check
# then refuses them), or set _decode_error for an element of the wrong type.
func _conform(value: Variant, expected: int, like: Variant) -> Variant:
	var kind: int = typeof(value)
	if kind == TYPE_ARRAY and expected == TYPE_ARRAY and typeof(like) == TYPE_ARRAY:
		var like_array: Array = like
		var given: Array = value
		return _typed_like(given, like_array)
	if kind == TYPE_DICTIONARY and expected == TYPE_DICTIONARY and typeof(like) == TYPE_DICTIONARY:
		var like_dict: Dictionary = like
		var given_dict: Dictionary = value
		return _typed_dict_like(given_dict, like_dict)
	if expected == TYPE_NIL or kind == expected:
		return value
	if expected == TYPE_INT and kind == TYPE_FLOAT:
		var f: float = value
		if not is_nan(f) and not is_inf(f) and f == float(int(f)):
			return int(f)
		return value
	if expected == TYPE_FLOAT and kind == TYPE_INT:
		var i: int = value
		return float(i)
	if expected == TYPE_STRING_NAME and kind == TYPE_STRING:
		var s: String = value
		return StringName(s)
	if expected == TYPE_STRING and kind == TYPE_STRING_NAME:
		return str(value)
	if expected == TYPE_NODE_PATH and kind == TYPE_STRING:
		var text: String = value
		return NodePath(text)
	if expected == TYPE_VECTOR2I and kind == TYPE_VECTOR2:
		var v2: Vector2 = value
		if v2 == v2.floor():
			return Vector2i(v2)
		return value
	if expected == TYPE_VECTOR2 and kind == TYPE_VECTOR2I:
		var v2i: Vector2i = value
		return Vector2(v2i)
	if expected == TYPE_VECTOR3I and kind == TYPE_VECTOR3:
		var v3: Vector3 = value
		if v3 == v3.floor():
			return Vector3i(v3)
		return value
	if expected == TYPE_VECTOR3 and kind == TYPE_VECTOR3I:
		var v3i: Vector3i = value
		return Vector3(v3i)
	if expected == TYPE_RECT2I and kind == TYPE_RECT2:
		var r: Rect2 = value
		if r.position == r.position.floor() and r.size == r.size.floor():
			return Rect2i(r)
		return value
	if expected == TYPE_RECT2 and kind == TYPE_RECT2I:
		var ri: Rect2i = value
		return Rect2(ri)
	if kind == TYPE_ARRAY and _PACKED_ELEMENT.has(expected):
		var list: Array = value
		return _packed(list, expected)
	return value


func _packed(list: Array, expected: int) -> Variant:
	var element: int = _as_int(_PACKED_ELEMENT.get(expected, TYPE_NIL), TYPE_NIL)
	var items: Array = []
	var i: int = 0
	while i < list.size():
		var item: Variant = _conform(list[i], element, null)
		if typeof(item) != element:
			_decode_error = "item %d is %s, not %s" % [i, _type_name(item), _kind_name(element)]
			return list
		items.append(item)
		i += 1
	if expected == TYPE_PACKED_BYTE_ARRAY:
		return PackedByteArray(items)
	if expected == TYPE_PACKED_INT32_ARRAY:
		return PackedInt32Array(items)
	if expected == TYPE_PACKED_INT64_ARRAY:
		return PackedInt64Array(items)
	if expected == TYPE_PACKED_FLOAT32_ARRAY:
		return PackedFloat32Array(items)
	if expected == TYPE_PACKED_FLOAT64_ARRAY:
		return PackedFloat64Array(items)
	if expected == TYPE_PACKED_STRING_ARRAY:
		return PackedStringArray(items)
	if expected == TYPE_PACKED_VECTOR2_ARRAY:
		return PackedVector2Array(items)
	if expected == TYPE_PACKED_VECTOR3_ARRAY:
		return PackedVector3Array(items)
	return PackedColorArray(items)


# A list for a typed array (Array[int], Array[Node2D]): the items bent to its element type, in a
# copy of the typed array (an untyped Array would be refused by the property).
func _typed_like(given: Array, like_array: Array) -> Variant:
	if not like_array.is_typed():
		return given
	var element: int = like_array.get_typed_builtin()
	var element_class: String = str(like_array.get_typed_class_name())
	var items: Array = []
	var i: int = 0
	while i < given.size():
		var item: Variant = _conform(given[i], element, null)
		if not _fits(item, element):
			_decode_error = "item %d is %s, not %s" % [i, _type_name(item), _kind_name(element)]
			return given
		if element == TYPE_OBJECT and element_class != "" and typeof(item) == TYPE_OBJECT:
			var obj: Object = item
			if not obj.is_class(element_class):
				_decode_error = "item %d is %s, not %s" % [i, obj.get_class(), element_class]
				return given
		items.append(item)
		i += 1
	var typed: Array = like_array.duplicate(false)
	typed.clear()
	typed.assign(items)
	return typed


# A dictionary for a typed dictionary (Dictionary[String, int], 4.4+): its keys and values bent to
# the key and value types, in a copy of the typed dictionary (an untyped one would be refused by
# the property). Typed dictionaries are newer than this bridge's oldest Godot 4, so their methods
# are asked for by name.
func _typed_dict_like(given: Dictionary, like_dict: Dictionary) -> Variant:
	if not _as_bool(_ask(like_dict, "is_typed"), false):
		return given
	var key_type: int = _as_int(_ask(like_dict, "get_typed_key_builtin"), TYPE_NIL)
	var key_class: String = str(_ask(like_dict, "get_typed_key_class_name"))
	var value_type: int = _as_int(_ask(like_dict, "get_typed_value_builtin"), TYPE_NIL)
	var value_class: String = str(_ask(like_dict, "get_typed_value_class_name"))
	var typed: Dictionary = like_dict.duplicate(false)
	typed.clear()
	var keys: Array = given.keys()
	var i: int = 0
	while i < keys.size():
		var key: Variant = _conform(keys[i], key_type, null)
		var why: String = _misfit(key, key_type, key_class)
		if why != "":
			_decode_error = "key %s is %s" % [_short(_encode(keys[i], 0)), why]
			return given
		var item: Variant = _conform(given[keys[i]], value_type, null)
		why = _misfit(item, value_type, value_class)
		if why != "":
			_decode_error = "the value of %s is %s" % [_short(_encode(keys[i], 0)), why]
			return given
		typed[key] = item
		i += 1
	return typed


# Why a value does not fit an element type (and class), or "" when it does.
func _misfit(value: Variant, element: int, element_class: String) -> String:
	if not _fits(value, element):
		return "%s, not %s" % [_type_name(value), _kind_name(element)]
	if element == TYPE_OBJECT and element_class != "" and typeof(value) == TYPE_OBJECT:
		var obj: Object = value
		if not obj.is_class(element_class):
			return "%s, not %s" % [obj.get_class(), element_class]
	return ""


# `value.method()` for a method this bridge's oldest Godot 4 may not have; null when it has not.
func _ask(value: Variant, method: String) -> Variant:
	var expression: Expression = Expression.new()
	if expression.parse("v.%s()" % method, PackedStringArray(["v"])) != OK:
		return null
	var answer: Variant = expression.execute([value], null, false)
	if expression.has_execute_failed():
		return null
	return answer


# -- JSON values, read safely ------------------------------------------------------------------

# A res:// path that stays inside the project: no "..", ".", empty segment or backslash (the
# engine reads a backslash as "/"), so no spelling of it leaves res://.
func _inside_res(path: String) -> bool:
	if not path.begins_with("res://") or path.find("\\") != -1:
		return false
	var parts: PackedStringArray = path.substr(6).split("/")
	var i: int = 0
	while i < parts.size():
		var part: String = parts[i]
		if part == "" or part == "." or part == "..":
			return false
		i += 1
	return true


func _as_int(value: Variant, fallback: int) -> int:
	var kind: int = typeof(value)
	if kind == TYPE_INT:
		var i: int = value
		return i
	if kind == TYPE_FLOAT:
		var f: float = value
		if is_nan(f) or is_inf(f):
			return fallback
		return int(f)
	return fallback


func _as_float(value: Variant, fallback: float) -> float:
	var kind: int = typeof(value)
	if kind == TYPE_FLOAT:
		var f: float = value
		return f
	if kind == TYPE_INT:
		var i: int = value
		return float(i)
	return fallback


func _as_bool(value: Variant, fallback: bool) -> bool:
	if typeof(value) == TYPE_BOOL:
		var b: bool = value
		return b
	return fallback


func _as_array(value: Variant) -> Array:
	if typeof(value) == TYPE_ARRAY:
		var a: Array = value
		return a
	return []


func _as_dict(value: Variant) -> Dictionary:
	if typeof(value) == TYPE_DICTIONARY:
		var d: Dictionary = value
		return d
	return {}


# -- captures ---------------------------------------------------------------------------------

func _begin_capture(id: Variant, name: String, cmd: Dictionary) -> void:
	if _headless:
		_fail(id, "unavailable", "captures need a windowed session; this one is headless")
		return
	if _job != null:
		_fail(id, "failed", "a capture is already running")
		return
	var paths: Array = []
	if name == "screenshot":
		paths = [str(cmd.get("path", ""))]
	else:
		paths = _as_array(cmd.get("paths", []))
	var i: int = 0
	while i < paths.size():
		if not str(paths[i]).is_absolute_path():
			_fail(id, "invalid_argument", "capture paths must be absolute")
			return
		i += 1
	var fps: float = _as_float(cmd.get("fps", 60), 60.0)
	if paths.is_empty() or fps <= 0.0:
		_fail(id, "invalid_argument", "nothing to capture")
		return
	var raw_path: String = str(cmd.get("raw_path", "")) if name == "screenshot" else ""
	if raw_path != "" and not raw_path.is_absolute_path():
		_fail(id, "invalid_argument", "capture paths must be absolute")
		return
	var job: CaptureJob = CaptureJob.new()
	job.id = id
	job.paths = paths
	job.raw_path = raw_path
	job.interval_us = int(1000000.0 / fps)
	job.start_us = Time.get_ticks_usec()
	# A project in low-processor mode draws only when something changes: a recording would
	# wait for frames that never come. It draws every frame while the job runs.
	job.low_processor = OS.low_processor_usage_mode
	OS.low_processor_usage_mode = false
	_job = job
	var err: int = RenderingServer.frame_post_draw.connect(_on_frame_post_draw)
	if err != OK:
		_finish_capture({"ok": false, "error": "failed",
			"message": "could not watch frames (error %d)" % err})
		return
	if name == "screenshot":
		# Draw now rather than waiting for the next frame, which never comes in low-processor mode
		# while nothing changes on screen.
		RenderingServer.force_draw(false)


func _on_frame_post_draw() -> void:
	if _job == null:
		return
	var t0: int = Time.get_ticks_usec()
	if t0 < _job.next_us:
		return
	var index: int = _job.frames.size()
	var texture: ViewportTexture = root.get_texture()
	var image: Image = null
	if texture != null:
		image = texture.get_image()
	if image == null:
		_finish_capture({"ok": false, "error": "unavailable", "message": "the viewport has no image"})
		return
	if _is_linear(image):
		_linear_to_srgb(image)
	var grabbed: int = Time.get_ticks_usec()
	var err: int = image.save_png(str(_job.paths[index]))
	var saved: int = Time.get_ticks_usec()
	if err != OK:
		_finish_capture({"ok": false, "error": "failed",
			"message": "could not save frame (error %d)" % err})
		return
	var frame: Dictionary = {
		"width": image.get_width(),
		"height": image.get_height(),
		"grab_ms": (grabbed - t0) / 1000.0,
		"save_ms": (saved - grabbed) / 1000.0,
		"at_ms": (t0 - _job.start_us) / 1000.0,
	}
	if _job.raw_path != "":
		var mode: String = _save_raw(image, _job.raw_path)
		if mode != "":
			frame["raw"] = mode
	_job.frames.append(frame)
	if _job.next_us == 0:
		_job.next_us = t0
	_job.next_us += _job.interval_us
	if _job.frames.size() >= _job.paths.size():
		_finish_capture({"ok": true, "frames": _job.frames})


# The pixels as they are (8-bit RGB or RGBA only): the server makes its preview from them
# without decoding the PNG again. "" when the image is another format or the write failed.
func _save_raw(image: Image, path: String) -> String:
	var mode: String = ""
	if image.get_format() == Image.FORMAT_RGBA8:
		mode = "RGBA"
	elif image.get_format() == Image.FORMAT_RGB8:
		mode = "RGB"
	if mode == "":
		return ""
	var file: FileAccess = FileAccess.open(path, FileAccess.WRITE)
	if file == null:
		return ""
	var _stored: Variant = file.call("store_buffer", image.get_data())
	var failed: bool = file.get_error() != OK
	file.close()
	return "" if failed else mode


# An HDR 2D viewport (4.2+) renders linear values into a float image; saved as they are, the PNG
# comes out far too dark. Viewport.use_hdr_2d is read by name so 4.0 and 4.1 run this too.
func _is_linear(image: Image) -> bool:
	var hdr: Variant = root.get("use_hdr_2d")
	if typeof(hdr) == TYPE_BOOL:
		var on: bool = hdr
		if on:
			return true
	var format: int = image.get_format()
	return (format == Image.FORMAT_RGBAH or format == Image.FORMAT_RGBAF
		or format == Image.FORMAT_RGBH or format == Image.FORMAT_RGBF)


# To 8-bit sRGB: Image.linear_to_srgb (4.4+; only RGB8/RGBA8 until half floats were added, hence
# the convert first), called by name; 4.2 and 4.3 have HDR 2D but not that method, so the same
# curve by hand there.
func _linear_to_srgb(image: Image) -> void:
	image.convert(Image.FORMAT_RGBA8)
	if image.has_method("linear_to_srgb"):
		var _done: Variant = image.call("linear_to_srgb")
		return
	var lut: PackedByteArray = PackedByteArray()
	var _resized: int = lut.resize(256)
	var i: int = 0
	while i < 256:
		var c: float = i / 255.0
		var s: float = c * 12.92
		if c > 0.0031308:
			s = 1.055 * pow(c, 1.0 / 2.4) - 0.055
		lut[i] = clampi(int(s * 255.0 + 0.5), 0, 255)
		i += 1
	var data: PackedByteArray = image.get_data()
	var j: int = 0
	while j < data.size():
		if j % 4 != 3:  # RGBA: the alpha byte stays
			data[j] = lut[data[j]]
		j += 1
	# By name too: only 4.2 and 4.3 come here, and the signature is not pinned for every 4.x.
	var _set: Variant = image.call("set_data", image.get_width(), image.get_height(), false,
		Image.FORMAT_RGBA8, data)


func _finish_capture(reply: Dictionary) -> void:
	if _job == null:
		return
	reply["id"] = _job.id
	_drop_capture()
	_send(reply)


func _drop_capture() -> void:
	if _job == null:
		return
	OS.low_processor_usage_mode = _job.low_processor
	_job = null
	_stop_watching_frames()


func _stop_watching_frames() -> void:
	if RenderingServer.frame_post_draw.is_connected(_on_frame_post_draw):
		RenderingServer.frame_post_draw.disconnect(_on_frame_post_draw)


func _send(message: Dictionary) -> void:
	if _peer.get_status() != StreamPeerTCP.STATUS_CONNECTED:
		return
	var _put_error: int = _peer.put_data((JSON.stringify(message) + "\n").to_utf8_buffer())


func _close(code: int) -> void:
	_phase = "closing"
	_stop_watching_frames()
	_job = null
	_inputs.clear()
	_stepping = false
	_peer.disconnect_from_host()
	quit(code)


# -- game time and the frame rate (docs/godot.md, "Game time and the frame rate") ------------

const RATE_WINDOW_US: int = 500000  # a rate is measured over at least this much of the last frames
const RATE_SPACING_US: int = 5000  # samples are this far apart at least: 256 cover over a second
const RATE_SAMPLES: int = 256


# Once a frame, first: the tree's time advances by the step it processed last frame (scaled by
# time_scale, none while paused), and the frame is sampled for the rate.
func _tick(delta: float) -> void:
	if not paused:
		_game_time += _last_delta
	_last_delta = delta
	_frames_seen += 1
	_tick_us = Time.get_ticks_usec()
	if _rate_us.is_empty() or _tick_us - _rate_us[_rate_us.size() - 1] >= RATE_SPACING_US:
		_rate_us.append(_tick_us)
		_rate_frames.append(_frames_seen)
		if _rate_us.size() > RATE_SAMPLES:
			_rate_us.pop_front()
			_rate_frames.pop_front()


# Frames a second over the shortest run of the last frames that spans RATE_WINDOW_US; null
# until the game's frames span that long (never the engine's first-second placeholder).
func _rate() -> Variant:
	var i: int = _rate_us.size() - 1
	while i >= 0:
		var span: int = _tick_us - _rate_us[i]
		if span >= RATE_WINDOW_US:
			return float(_frames_seen - _rate_frames[i]) * 1000000.0 / float(span)
		i -= 1
	return null


func _reached(until: float) -> bool:
	return _game_time >= until - 0.000001


# {"cmd": "after", "seconds": S}: answered once S seconds of game time have passed.
func _cmd_after(id: Variant, cmd: Dictionary) -> void:
	var seconds: float = maxf(_as_float(cmd.get("seconds", 0.0), 0.0), 0.0)
	_timers.append({"id": id, "until": _game_time + seconds})


func _advance_timers() -> void:
	var i: int = 0
	while i < _timers.size():
		var timer: Dictionary = _timers[i]
		var until: float = timer["until"]
		if _reached(until):
			_send({"id": timer["id"], "ok": true, "frame": Engine.get_process_frames(),
				"time": _game_time})
			_timers.remove_at(i)
		else:
			i += 1


func _drop_timer(target: Variant) -> bool:
	var i: int = 0
	while i < _timers.size():
		var timer: Dictionary = _timers[i]
		if timer["id"] == target:
			_timers.remove_at(i)
			return true
		i += 1
	return false
# -- inspect: a node's script, methods, wiring, groups and properties (docs/godot.md) --------
# Lines and argument lists are read from each script's source, as bridge3.gd does; the engine's
# own method list says which funcs are the script's and names their arguments.

const INSPECT_MAX: int = 200  # items a list
const INSPECT_VALUE_CHARS: int = 16384  # a property value's JSON past this is left out, sized
# Bytes of items one reply may carry: well under what the server reads as one line (4 MiB).
const INSPECT_REPLY_BYTES: int = 1500000
const INSPECT_ALL: Array = ["script", "methods", "signals", "groups", "properties"]
var _func_re: RegEx = null
var _class_re: RegEx = null
var _signal_re: RegEx = null
var _script_methods: Dictionary = {}  # a script's instance id -> {method name: true}
var _inspect_room: int = 0  # bytes of items the reply being built may still take


# Whether `item` may join `list`: under INSPECT_MAX items and still fitting the reply (its room
# taken if so); if not, `part` is named in `truncated` (once).
func _inspect_keeps(list: Array, item: Variant, truncated: Array, part: String) -> bool:
	var size: int = JSON.stringify(item).to_utf8_buffer().size()
	if list.size() >= INSPECT_MAX or size > _inspect_room:
		if not truncated.has(part):
			truncated.append(part)
		return false
	_inspect_room -= size
	return true


func _cmd_inspect(id: Variant, cmd: Dictionary) -> void:
	var node: Node = _node_at(id, cmd)
	if node == null:
		return
	var include: Array = INSPECT_ALL
	if typeof(cmd.get("include")) == TYPE_ARRAY:
		include = _as_array(cmd.get("include"))
	if _func_re == null:
		_func_re = RegEx.new()
		var _e1: int = _func_re.compile("^(?:@[\\w.]+(?:\\([^)]*\\))?\\s+)*(?:static\\s+)*func\\s+([A-Za-z_]\\w*)\\s*\\(")
		_class_re = RegEx.new()
		_signal_re = RegEx.new()
		var _e3: int = _signal_re.compile("(?m)^signal\\s+([A-Za-z_]\\w*)")
		var _e2: int = _class_re.compile("(?m)^(?:@[\\w.]+(?:\\([^)]*\\))?\\s+)*class_name\\s+([A-Za-z_]\\w*)")
	_script_methods = {}
	_inspect_room = INSPECT_REPLY_BYTES
	var chain: Array = []
	var script: Script = node.get_script()
	while script != null and chain.size() < 64:
		chain.append(script)
		script = script.get_base_script()
	var truncated: Array = []
	var reply: Dictionary = {"id": id, "ok": true, "class": node.get_class()}
	if include.has("script"):
		reply["script"] = _inspect_script(chain)
	if include.has("methods"):
		reply["methods"] = _inspect_methods(chain, truncated)
	if include.has("signals"):
		reply["signals"] = _inspect_signals(node, chain, truncated)
		reply["connected_in"] = _inspect_incoming(node, truncated)
	if include.has("groups"):
		reply["groups"] = _inspect_groups(node, truncated)
	if include.has("properties"):
		reply["properties"] = _inspect_properties(node, chain, truncated)
	reply["truncated"] = truncated
	_script_methods = {}
	_send(reply)


func _inspect_script(chain: Array) -> Variant:
	if chain.is_empty():
		return null
	var script: Script = chain[0]
	var out: Dictionary = {"path": script.resource_path}
	var cname: String = _script_class_name(script)
	if cname != "":
		out["class_name"] = cname
	if chain.size() > 1:
		var base: Script = chain[1]
		out["extends"] = base.resource_path if base.resource_path != "" else _script_class_name(base)
	else:
		out["extends"] = str(script.get_instance_base_type())
	return out


func _script_class_name(script: Script) -> String:
	if script.has_method("get_global_name"):
		var named: String = str(script.call("get_global_name"))
		if named != "":
			return named
	var found: RegExMatch = _class_re.search(script.source_code)
	if found != null:
		return found.get_string(1)
	return ""


func _source_of(script: Script) -> String:
	if script is GDScript:
		return script.source_code
	return ""


# The script's own methods, then those of each script it extends, each in source order with
# its func line; never engine methods (only what a source writes).
func _inspect_methods(chain: Array, truncated: Array) -> Array:
	var out: Array = []
	var i: int = 0
	while i < chain.size():
		var script: Script = chain[i]
		var listed: Dictionary = {}  # name -> the engine's argument list; a script's own first
		var methods: Array = script.get_script_method_list()
		var m: int = 0
		while m < methods.size():
			var info: Dictionary = _as_dict(methods[m])
			var mname: String = str(info.get("name", ""))
			if not listed.has(mname):
				listed[mname] = _as_array(info.get("args", []))
			m += 1
		var source: String = _source_of(script)
		var found: Array = []
		if source != "":
			found = _source_funcs(source)
		else:  # no source: what this script adds to its base's list, without a line
			var base_names: Dictionary = {}
			if i + 1 < chain.size():
				var base: Script = chain[i + 1]
				base_names = _names_in(base.get_script_method_list())
			var names: Array = listed.keys()
			var n: int = 0
			while n < names.size():
				var lname: String = str(names[n])
				if not base_names.has(lname) and not lname.begins_with("@"):
					found.append([lname, null, []])
				n += 1
		var f: int = 0
		while f < found.size():
			var entry: Array = found[f]
			f += 1
			var fname: String = str(entry[0])
			if not listed.has(fname):
				continue
			var item: Dictionary = {"name": fname,
				"args": _arg_names(_as_array(listed[fname]), _as_array(entry[2])),
				"path": script.resource_path, "line": entry[1]}
			if not _inspect_keeps(out, item, truncated, "methods"):
				return out
			out.append(item)
		i += 1
	return out


# [name, line, argument names] of each top-level func of a source, in order.
func _source_funcs(source: String) -> Array:
	var out: Array = []
	var lines: PackedStringArray = source.split("\n")
	var i: int = 0
	while i < lines.size():
		var line: String = lines[i]
		i += 1
		if line == "" or line[0] == "\t" or line[0] == " " or line[0] == "#":
			continue
		var found: RegExMatch = _func_re.search(line)
		if found != null:
			out.append([found.get_string(1), i, _source_args(lines, i - 1, found.get_end())])
	return out


# The argument names of a func whose "(" ends at `at` of line `row` (it may span lines).
func _source_args(lines: PackedStringArray, row: int, at: int) -> Array:
	var parts: Array = []
	var part: String = ""
	var depth: int = 1
	var quote: String = ""
	var r: int = row
	var text: String = lines[row].substr(at)
	while depth > 0:
		var k: int = 0
		while k < text.length():
			var c: String = text[k]
			k += 1
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
	var names: Array = []
	var p: int = 0
	while p < parts.size():
		var pname: String = str(parts[p]).strip_edges()
		p += 1
		var seps: Array = [":", "=", " "]
		var s: int = 0
		while s < seps.size():
			var cut: int = pname.find(str(seps[s]))
			if cut >= 0:
				pname = pname.substr(0, cut).strip_edges()
			s += 1
		if pname != "":
			names.append(pname)
	return names


# The engine's argument names where it kept them all, else the source's.
func _arg_names(listed: Array, from_source: Array) -> Array:
	var names: Array = []
	var i: int = 0
	while i < listed.size():
		var aname: String = str(_as_dict(listed[i]).get("name", ""))
		if aname == "":
			return from_source
		names.append(aname)
		i += 1
	if names.is_empty() and not from_source.is_empty():
		return from_source
	return names


# Every signal the script declares (with or without connections), then every other signal of
# the node that has a connection the project made.
func _inspect_signals(node: Node, chain: Array, truncated: Array) -> Array:
	var names: Array = []
	var declared: Dictionary = {}
	if not chain.is_empty():
		var script: Script = chain[0]
		var listed_names: Dictionary = _names_in(script.get_script_signal_list())
		# In the order the sources declare them (the script's own first), then any other.
		var c: int = 0
		while c < chain.size():
			var each: Script = chain[c]
			c += 1
			var found: Array = _signal_re.search_all(_source_of(each))
			var f: int = 0
			while f < found.size():
				var hit: RegExMatch = found[f]
				f += 1
				var sname: String = hit.get_string(1)
				if listed_names.has(sname) and not declared.has(sname):
					declared[sname] = true
					names.append(sname)
		var rest: Array = []
		var keys: Array = listed_names.keys()
		var r: int = 0
		while r < keys.size():
			if not declared.has(keys[r]):
				rest.append(keys[r])
			r += 1
		rest.sort()
		var k: int = 0
		while k < rest.size():
			declared[rest[k]] = true
			names.append(rest[k])
			k += 1
	var listed: Array = node.get_signal_list()
	var j: int = 0
	while j < listed.size():
		var lname: String = str(_as_dict(listed[j]).get("name", ""))
		j += 1
		if not declared.has(lname) and not names.has(lname):
			names.append(lname)
	var out: Array = []
	var n: int = 0
	while n < names.size():
		var signal_name: String = str(names[n])
		n += 1
		var connections: Array = []
		var found: Array = node.get_signal_connection_list(StringName(signal_name))
		var c: int = 0
		while c < found.size():
			var conn: Dictionary = _as_dict(found[c])
			c += 1
			var callable: Callable = conn.get("callable", Callable())
			if not _made_by_project(callable, _as_int(conn.get("flags", 0), 0)):
				continue
			var entry: Dictionary = {"node": _object_name(callable.get_object()),
				"method": str(callable.get_method())}
			if not _inspect_keeps(connections, entry, truncated, "signals"):
				break
			connections.append(entry)
		if declared.has(signal_name) or not connections.is_empty():
			if not _inspect_keeps(out, signal_name, truncated, "signals"):
				break
			out.append({"name": signal_name, "connections": connections})
	return out


# Other objects' signals connected to this node's methods.
func _inspect_incoming(node: Node, truncated: Array) -> Array:
	var out: Array = []
	var found: Array = node.get_incoming_connections()
	var i: int = 0
	while i < found.size():
		var conn: Dictionary = _as_dict(found[i])
		i += 1
		var sig: Signal = conn.get("signal", Signal())
		var callable: Callable = conn.get("callable", Callable())
		var source: Object = sig.get_object()
		if source == null or source == node:
			continue
		if not _made_by_project(callable, _as_int(conn.get("flags", 0), 0)):
			continue
		var entry: Dictionary = {"node": _object_name(source), "signal": str(sig.get_name()),
			"method": str(callable.get_method())}
		if not _inspect_keeps(out, entry, truncated, "connected_in"):
			break
		out.append(entry)
	return out


# A connection the project made (in a scene, or in its code, a lambda included), not one the
# engine makes for itself: its method pointers ("Class::method"), to its own internal methods
# or a viewport or window, or to this bridge.
func _made_by_project(callable: Callable, flags: int) -> bool:
	var target: Object = callable.get_object()
	if target == null or target == self:
		return false
	var method: String = str(callable.get_method())
	if callable.is_custom():
		return not method.contains("::")
	if (flags & CONNECT_PERSIST) != 0:
		return true
	if _script_defines(target, method):
		return true
	return not (method.begins_with("_") or target is Viewport)


func _script_defines(target: Object, method: String) -> bool:
	var script: Script = target.get_script()
	if script == null:
		return false
	var key: int = script.get_instance_id()
	if not _script_methods.has(key):
		_script_methods[key] = _names_in(script.get_script_method_list())
	var known: Dictionary = _script_methods[key]
	return known.has(method)


# {name: true} of each entry of an engine list (methods, signals, properties).
func _names_in(listed: Array) -> Dictionary:
	var names: Dictionary = {}
	var i: int = 0
	while i < listed.size():
		names[str(_as_dict(listed[i]).get("name", ""))] = true
		i += 1
	return names


# A node by its absolute path; another object by its res:// path, else its class.
func _object_name(obj: Object) -> String:
	if obj is Node:
		var n: Node = obj
		if n.is_inside_tree():
			return str(n.get_path())
	elif obj is Resource:
		var res: Resource = obj
		if res.resource_path != "":
			return res.resource_path
	return "<%s>" % obj.get_class()


# The groups the project put the node in, sorted; never the engine's own ("_"-prefixed).
func _inspect_groups(node: Node, truncated: Array) -> Array:
	var out: Array = []
	var groups: Array = node.get_groups()
	var i: int = 0
	while i < groups.size():
		var gname: String = str(groups[i])
		i += 1
		if not gname.begins_with("_"):
			out.append(gname)
	out.sort()
	var kept: Array = []
	var k: int = 0
	while k < out.size():
		if not _inspect_keeps(kept, out[k], truncated, "groups"):
			break
		kept.append(out[k])
		k += 1
	return kept


# The script's variables (its own first, then each base's), then the stored properties whose
# value differs from the class's default.
func _inspect_properties(node: Node, chain: Array, truncated: Array) -> Array:
	var out: Array = []
	var seen: Dictionary = {"script": true}
	var i: int = 0
	while i < chain.size():
		var base_names: Dictionary = {}
		if i + 1 < chain.size():
			var base: Script = chain[i + 1]
			base_names = _names_in(base.get_script_property_list())
		var script: Script = chain[i]
		i += 1
		var listed: Array = script.get_script_property_list()
		var j: int = 0
		while j < listed.size():
			var info: Dictionary = _as_dict(listed[j])
			j += 1
			var pname: String = str(info.get("name", ""))
			var usage: int = _as_int(info.get("usage", 0), 0)
			if seen.has(pname) or base_names.has(pname) or (usage & PROPERTY_USAGE_SCRIPT_VARIABLE) == 0:
				continue
			seen[pname] = true
			var entry: Dictionary = _inspect_property(info, node.get(pname))
			if not _inspect_keeps(out, entry, truncated, "properties"):
				return out
			out.append(entry)
	var cls: StringName = StringName(node.get_class())
	var props: Array = node.get_property_list()
	var k: int = 0
	while k < props.size():
		var prop: Dictionary = _as_dict(props[k])
		k += 1
		var prop_name: String = str(prop.get("name", ""))
		var prop_usage: int = _as_int(prop.get("usage", 0), 0)
		if seen.has(prop_name) or (prop_usage & PROPERTY_USAGE_STORAGE) == 0:
			continue
		seen[prop_name] = true
		var value: Variant = node.get(prop_name)
		var class_default: Variant = ClassDB.class_get_property_default_value(cls, StringName(prop_name))
		if _same(_encode(value, 0), _encode(class_default, 0)):
			continue
		var prop_entry: Dictionary = _inspect_property(prop, value)
		if not _inspect_keeps(out, prop_entry, truncated, "properties"):
			break
		out.append(prop_entry)
	return out


func _inspect_property(info: Dictionary, value: Variant) -> Dictionary:
	var encoded: Variant = _encode(value, 0)
	var text: String = JSON.stringify(encoded)
	var size: int = text.to_utf8_buffer().size()
	if text.length() > INSPECT_VALUE_CHARS or size > _inspect_room - 1024:  # sized, not sent
		encoded = {"type": "truncated", "bytes": size}
	var kind: int = _as_int(info.get("type", TYPE_NIL), TYPE_NIL)
	var type_name: String = _kind_name(kind)
	if kind == TYPE_NIL:
		type_name = "Variant"
	elif kind == TYPE_OBJECT:
		var cls: String = str(info.get("class_name", ""))
		if cls == "" and _as_int(info.get("hint", 0), 0) == PROPERTY_HINT_RESOURCE_TYPE:
			cls = str(info.get("hint_string", ""))
		type_name = cls if cls != "" else "Object"
	var usage: int = _as_int(info.get("usage", 0), 0)
	return {"name": str(info.get("name", "")), "type": type_name,
		"exported": (usage & PROPERTY_USAGE_EDITOR) != 0, "value": encoded}
