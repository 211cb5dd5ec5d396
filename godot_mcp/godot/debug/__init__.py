"""The engine's own remote debugger, spoken by the server for the games it starts."""
