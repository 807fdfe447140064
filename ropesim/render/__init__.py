"""Drawing without a window: orbit camera, picking math, surface normals, the moderngl
renderer and offscreen targets. Imports the engine and io (shader paths), never the app."""
