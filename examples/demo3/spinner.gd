extends Node2D
# Draws rotating polygons and a bouncing circle so that every frame differs.
# The "flip" action reverses the spin (the demo presses it through runtime.input.send).

var t := 0.0
var reversed := false


func _ready() -> void:
	print("spinner ready")


func _unhandled_input(event: InputEvent) -> void:
	if event.is_action_pressed("flip"):
		reversed = not reversed
		print("flipped: reversed=%s" % reversed)


func _process(delta: float) -> void:
	t += -delta if reversed else delta
	update()


func _draw() -> void:
	var size := get_viewport_rect().size
	var centre := size / 2.0
	var radius: float = min(size.x, size.y) * 0.3
	for i in range(6):
		var angle := t * (1.0 + i * 0.35) + i
		var points := PoolVector2Array()
		var sides := 3 + i
		for k in range(sides):
			var a := angle + TAU * k / sides
			points.append(centre + Vector2(cos(a), sin(a)) * radius * (1.0 - i * 0.14))
		draw_colored_polygon(points, Color.from_hsv(fmod(t * 0.2 + i / 6.0, 1.0), 0.8, 0.95))
	var x := fmod(t * size.x * 0.4, size.x * 2.0)
	if x > size.x:
		x = size.x * 2.0 - x
	var y := size.y * 0.5 + sin(t * 3.0) * size.y * 0.35
	draw_circle(Vector2(x, y), radius * 0.25, Color(1.0, 0.9, 0.2))
