"""Drawing without a window: orbit camera, picking math, surface normals, the moderngl
renderer, offscreen targets, the frame loop and headless rendering to files. Imports the
engine and io (shader paths, video writers), never the app."""
