extends SceneTree
# The project check for Godot 4 (see features/check/job.py): loads every listed file in this one
# process and marks where each begins and ends on stderr, where Godot prints its errors.
# The server fills in __LIST__ (a file of res:// paths, one a line) and __MARK__ (a nonce).
# "MISSING owner dep" names a file that owner needs and that does not exist.
# Verified on Godot 4.6.3 (see docs/godot.md).

const LIST: String = "__LIST__"
const MARK: String = "__MARK__"


# _initialize, not _init: with --script, Godot 4 registers the project's autoloads as global
# names only after the main loop's _init, so a script naming one would not compile there.
func _initialize() -> void:
	if not FileAccess.file_exists(LIST):
		printerr(MARK + " FATAL cannot read the list of files")
		quit(3)
		return
	var text: String = FileAccess.get_file_as_string(LIST)
	var paths: PackedStringArray = text.split("\n", false)
	_settings()
	printerr(MARK + " START %d" % paths.size())
	# Scripts stay loaded (and cached): each is parsed once, and a script another one
	# preloads is not freed and parsed again at every turn (quadratic on a preload chain).
	var scripts: Array[Resource] = []
	var i: int = 0
	while i < paths.size():
		var p: String = paths[i]
		i += 1
		printerr(MARK + " BEGIN " + p)
		var r: Resource = ResourceLoader.load(p)
		var ok: bool = r != null
		if ok and r is Script:
			scripts.append(r)
			var can: bool = r.call("can_instantiate")
			ok = can
		elif not p.ends_with(".gd"):
			_dependencies(p)
			if ok and r is PackedScene:
				_instantiate(p, r)
		printerr(MARK + (" END ok " if ok else " END failed ") + p)
	printerr(MARK + " DONE")
	quit()


# As a game would: every node's class created and its script attached (their _init and setters
# run), never added to a tree, then freed. Errors printed here are the scene's.
func _instantiate(p: String, scene: Resource) -> void:
	printerr(MARK + " INSTANCE " + p)
	var node: Object = scene.call("instantiate")
	if node != null:
		node.free()


func _settings() -> void:
	var needed: PackedStringArray = PackedStringArray()
	if ProjectSettings.has_setting("application/run/main_scene"):
		var _main: bool = needed.append(str(ProjectSettings.get_setting("application/run/main_scene")))
	var props: Array[Dictionary] = ProjectSettings.get_property_list()
	var i: int = 0
	while i < props.size():
		var key: String = str(props[i].get("name", ""))
		i += 1
		if key.begins_with("autoload/"):
			var _autoload: bool = needed.append(str(ProjectSettings.get_setting(key)).trim_prefix("*"))
	i = 0
	while i < needed.size():
		var dep: String = needed[i]
		i += 1
		if dep != "" and not FileAccess.file_exists(dep):
			printerr(MARK + " MISSING res://project.godot " + dep)


func _dependencies(p: String) -> void:
	# Godot 4 lists "uid://…::Type::res://path" (older 4.x "res://path::Type"): the res:// part.
	var deps: PackedStringArray = ResourceLoader.get_dependencies(p)
	var i: int = 0
	while i < deps.size():
		var path: String = ""
		var parts: PackedStringArray = deps[i].split("::")
		i += 1
		var j: int = 0
		while j < parts.size():
			if parts[j].begins_with("res://"):
				path = parts[j]
			j += 1
		if path == "":
			continue
		if not FileAccess.file_exists(path):  # not ResourceLoader.exists: a failed load is cached
			printerr(MARK + " MISSING " + p + " " + path)
