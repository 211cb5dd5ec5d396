extends SceneTree
# The project check for Godot 4 (see godot/check.py): loads every listed file in this one
# process and marks where each begins and ends on stderr, where Godot prints its errors.
# The server fills in __LIST__ (a file of res:// paths, one a line) and __MARK__ (a nonce).
# Written against Godot 4's class reference; not run on this machine (see docs/godot.md).

const LIST: String = "__LIST__"
const MARK: String = "__MARK__"


func _init() -> void:
	if not FileAccess.file_exists(LIST):
		printerr(MARK + " FATAL cannot read the list of files")
		quit(3)
		return
	var text: String = FileAccess.get_file_as_string(LIST)
	var paths: PackedStringArray = text.split("\n", false)
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
		printerr(MARK + (" END ok " if ok else " END failed ") + p)
	printerr(MARK + " DONE")
	quit()
