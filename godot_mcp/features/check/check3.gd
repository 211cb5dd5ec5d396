extends SceneTree
# The project check for Godot 3 (see features/check/job.py): loads every listed file in this one
# process and marks where each begins and ends on stderr, where Godot prints its errors.
# The server fills in __LIST__ (a file of res:// paths, one a line) and __MARK__ (a nonce).
# "MISSING owner dep" names a file that owner needs and that does not exist.

const LIST = "__LIST__"
const MARK = "__MARK__"


func _init():
	var f = File.new()
	if f.open(LIST, File.READ) != OK:
		printerr(MARK + " FATAL cannot read the list of files")
		quit(3)
		return
	var paths = f.get_as_text().split("\n", false)
	f.close()
	_settings()
	printerr(MARK + " START %d" % paths.size())
	# Scripts stay loaded (and cached): each is parsed once, and a script another one
	# preloads is not freed and parsed again at every turn (quadratic on a preload chain).
	var scripts = []
	for p in paths:
		printerr(MARK + " BEGIN " + p)
		var r = ResourceLoader.load(p)
		var ok = r != null
		if ok and r is Script:
			scripts.append(r)
			ok = r.can_instance()
		elif not p.ends_with(".gd"):
			_dependencies(p)
			if ok and r is PackedScene:
				_instance(p, r)
		printerr(MARK + (" END ok " if ok else " END failed ") + p)
	printerr(MARK + " DONE")
	quit()


# As a game would: every node's class created and its script attached (their _init and setters
# run), never added to a tree, then freed. Errors printed here are the scene's.
func _instance(p, scene):
	printerr(MARK + " INSTANCE " + p)
	var node = scene.instance()
	if node != null:
		node.free()


func _settings():
	var needed = []
	if ProjectSettings.has_setting("application/run/main_scene"):
		needed.append(str(ProjectSettings.get_setting("application/run/main_scene")))
	for prop in ProjectSettings.get_property_list():
		if str(prop.name).begins_with("autoload/"):
			needed.append(str(ProjectSettings.get_setting(prop.name)).trim_prefix("*"))
	var files = File.new()
	for dep in needed:
		if dep != "" and not files.file_exists(dep):
			printerr(MARK + " MISSING res://project.godot " + dep)


func _dependencies(p):
	# A file, not ResourceLoader.exists: a failed load leaves its path in the cache.
	var files = File.new()
	for dep in ResourceLoader.get_dependencies(p):
		var path = str(dep).split("::")[0]
		if not files.file_exists(path):
			printerr(MARK + " MISSING " + p + " " + path)
