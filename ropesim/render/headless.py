"""Headless rendering: a scene or a simulation to frames, a video, a GIF or a still.

:func:`render` (``rs.render``, ``ropesim render``) draws with the viewer's own
:class:`~ropesim.render.renderer.Renderer` into an offscreen target of an EGL context
(no display, no GPU needed: Mesa's llvmpipe is enough) and steps the simulation with
the viewer's frame loop (:func:`~ropesim.render.frame_loop.advance_frame`), so a video
looks and plays like the viewer.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from ..engine.simulation import Simulation
from ..io.outputs import Progress, check_count
from ..io.scenes import Scene, load
from ..io.video import (DEFAULT_FPS, DEFAULT_GIF_FPS, DEFAULT_SIZE, check_video_path,
                        open_video_writer, output_kind, save_png, steps_per_frame)
from .frame_loop import advance_frame

if TYPE_CHECKING:
    from .camera import OrbitCamera

DEFAULT_RENDER_DURATION = 4.0  # s of simulated time


def _simulation_and_hints(scene_or_sim: Any) -> tuple[Simulation, dict]:
    """A Simulation and the scene's camera hints from a Scene, scene name/path or Simulation."""
    if isinstance(scene_or_sim, Simulation):
        return scene_or_sim, {}
    scene = scene_or_sim if isinstance(scene_or_sim, Scene) else load(scene_or_sim)
    return scene.simulation(), dict(scene.camera)


def make_camera(sim: Simulation, aspect: float, hints: Mapping[str, Any] | None = None,
                camera: Any = None) -> "OrbitCamera":
    """An OrbitCamera framing the scene's reach (:func:`~ropesim.render.framing.reach_points`,
    as the viewer's F key and scene loads do) for ``aspect`` (width / height), seen from
    the scene's camera hints' direction (azimuth, elevation, fov_y; their distance and
    target are for the scene's default size, so the box sets those, also after a
    ``--set`` size change), then updated with ``camera``: a dict (as from
    :func:`~ropesim.render.camera.parse_camera_arg`), an "azimuth,elevation,distance" string,
    or an OrbitCamera used as it is."""
    from .camera import OrbitCamera, parse_camera_arg
    from .framing import reach_points

    if isinstance(camera, OrbitCamera):
        return camera
    hints = hints or {}
    view = OrbitCamera()
    if "fov_y" in hints:
        view.fov_y = float(hints["fov_y"])
    view.frame(reach_points(sim), planar=sim.planar, aspect=aspect,
               azimuth=hints.get("azimuth"), elevation=hints.get("elevation"))
    if isinstance(camera, str):
        camera = parse_camera_arg(camera)
    view.update(camera or {})
    return view


def frame_count(frames: int | None, duration: float | None, fps: float) -> int:
    """Frames to render from ``frames`` or ``duration`` (s); the default is 4 s."""
    if frames is not None and duration is not None:
        raise ValueError("give frames or duration, not both")
    if frames is not None:
        return check_count("frames", frames, 1)
    duration = DEFAULT_RENDER_DURATION if duration is None else float(duration)
    if not (duration >= 0 and math.isfinite(duration)):
        raise ValueError(f"duration: must be a finite number >= 0 s, got {duration}")
    return max(1, round(duration * fps))


def render(scene_or_sim: Any, out: str | Path | None = None, frames: int | None = None,
           duration: float | None = None, fps: float | None = None,
           size: tuple[int, int] = DEFAULT_SIZE, camera: Any = None,
           wireframe: str = "surface", strain_colors: bool = False,
           progress: Progress | None = None, samples: int = 4) -> list[np.ndarray] | Path:
    """Render a scene (a Scene, a scene name or .toml path) or a Simulation offscreen.

    Frame i shows the state after i * steps_per_frame(dt, fps) steps, so the video
    plays at true speed; ``frames`` or ``duration`` (s, default 4) sets the count.
    ``size`` is (width, height) px; ``camera`` as in :func:`make_camera`;
    ``wireframe`` one of renderer.WIREFRAME_MODES. Needs no display (EGL).

    With ``out`` None returns the frames as (h, w, 3) uint8 arrays. Otherwise writes
    ``out`` (.mp4, .gif, a folder of PNGs, or .png: one still of the last frame)
    and returns its path. On divergence or Ctrl-C the frames rendered so far are
    written (the file is closed properly) and the exception propagates.
    """
    # GL is imported on first use: `import ropesim` (engine scripting) needs no moderngl
    from . import offscreen
    from .renderer import Renderer, RenderOptions

    if fps is None:
        fps = DEFAULT_GIF_FPS if out is not None and output_kind(out) == "gif" else DEFAULT_FPS
    if not (fps > 0 and math.isfinite(fps)):
        raise ValueError(f"fps: must be a finite number > 0, got {fps}")
    n_frames = frame_count(frames, duration, fps)
    width, height = (check_count("width", size[0], 1), check_count("height", size[1], 1))
    options = RenderOptions(mode=wireframe, strain_colors=strain_colors)
    kind = None if out is None else check_video_path(out, (width, height))
    sim, hints = _simulation_and_hints(scene_or_sim)
    view = make_camera(sim, width / height, hints, camera)
    spf = steps_per_frame(sim.dt, fps)

    frames_out: list[np.ndarray] = []
    writer = open_video_writer(out, fps) if kind in ("mp4", "gif", "frames") else None
    ctx = offscreen.create_headless_context()
    renderer = None
    try:
        renderer = Renderer(ctx, sim)
        for i in range(n_frames):
            if i:
                diverged = advance_frame(sim, spf).diverged
                if diverged is not None:
                    raise diverged
            if kind == "png" and i < n_frames - 1:
                pass  # a still shows only the last frame
            else:
                rgb = offscreen.render_frame(ctx, renderer, view, width, height, options, samples)
                if writer is not None:
                    writer.append(rgb)
                elif kind == "png":
                    save_png(out, rgb)
                else:
                    frames_out.append(rgb)
            if progress is not None:
                progress(i + 1, n_frames)
    finally:
        if writer is not None:
            writer.close()
        if renderer is not None:
            renderer.release()
        ctx.release()
    return frames_out if out is None else Path(out)


__all__ = ["DEFAULT_RENDER_DURATION", "frame_count", "make_camera", "render"]
