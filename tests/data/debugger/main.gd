extends Node2D

var speed = 42
var label = "hello"

func _ready():
	var local_a = 7
	var local_b = "seven"
	print("ready ", local_a, local_b)

func _process(delta):
	var t = delta * 2.0
	speed += 1
	if speed == 100:
		helper(t)

func helper(x):
	var y = x + 1
	return y
