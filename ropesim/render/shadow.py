"""The key light's shadow map: a depth texture rendered from a directional light.

Every frame the light's orthographic frustum is fitted to a sphere around the
shadow casters (the scene's particles and the sphere obstacles) and stretched
in depth to reach the floor or backdrop that receives the shadows. The frustum's
size is rounded up to steps of 2^(1/4) and its centre snapped to whole texels,
so the shadow edges do not shimmer while the cloth moves. Shaders read the map
through shaders/shadow.glsl: a comparison sampler (hardware 2x2 PCF) on one
texture unit and the raw depth on another. The floor's soft contact shadow is
costly per pixel, so it is computed once per frame into a small two-channel
texture over the same light coordinates (``floor_texture``: visibility and
ambient occlusion, shaders/floor_shadow.frag) that the floor reads back. Both are
drawn again only when what casts or receives the shadows changed
(:class:`ShadowInputs`): a paused or resting scene reuses them, whatever the camera.

Conventions as in renderer.py: metres, y up, pyrr's row-vector matrices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import moderngl
import numpy as np
from pyrr import matrix44

__all__ = ["LIGHT_DIRECTION", "LIGHT_DIRECTION_PLANAR", "LightFrame", "fit_light", "ShadowInputs",
           "ShadowMap"]


def _unit(v: tuple[float, float, float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


# Towards the key light (world): high above, a little to the left and front, so
# shadows fall just behind and beside what casts them.
LIGHT_DIRECTION = _unit((-0.30, 1.0, 0.38))
# Planar scenes (x-y, seen from +z): from the front upper left, onto the backdrop.
LIGHT_DIRECTION_PLANAR = _unit((-0.35, 0.45, 1.0))


@dataclass
class LightFrame:
    """The light's matrices for one frame (row-vector layout, float32) and scales."""

    view: np.ndarray
    proj: np.ndarray
    view_proj: np.ndarray
    texel_m: float      # m covered by one shadow-map texel
    depth_m: float      # m covered by the depth range 0..1


@lru_cache(maxsize=8)
def _light_basis(direction: tuple[float, float, float]) -> tuple[np.ndarray, ...]:
    """Unit (towards the light, right, up) vectors of a light direction."""
    d = _unit(direction)
    up_hint = np.array([0.0, 0.0, 1.0]) if abs(d[1]) > 0.9 else np.array([0.0, 1.0, 0.0])
    right = np.cross(up_hint, d)
    right /= np.linalg.norm(right)
    return d, right, np.cross(d, right)


def fit_light(direction: np.ndarray, center: np.ndarray, radius: float,
              receiver_depth_m: float, resolution: int) -> LightFrame:
    """Frustum of a directional light (``direction`` towards it) around the sphere
    (``center``, ``radius`` m) of the casters, reaching ``receiver_depth_m`` m
    beyond the sphere's centre along the light (the floor under the casters)."""
    d, right, up = _light_basis(tuple(float(v) for v in direction))
    radius = 2.0 ** (math.ceil(4.0 * math.log2(max(radius, 1e-6))) / 4.0)
    texel = 2.0 * radius / resolution
    c = np.asarray(center, dtype=np.float64)
    # snap the centre to whole texels across the light (along it nothing shimmers)
    snapped = (right * (np.round(c @ right / texel) * texel)
               + up * (np.round(c @ up / texel) * texel) + d * (c @ d))
    eye = snapped + d * (2.0 * radius)
    near = 0.9 * radius
    far = 2.0 * radius + max(receiver_depth_m, radius) + 0.1 * radius
    view = matrix44.create_look_at(eye, snapped, up, dtype=np.float64)
    proj = matrix44.create_orthogonal_projection(-radius, radius, -radius, radius,
                                                 near, far, dtype=np.float64)
    return LightFrame(view.astype(np.float32), proj.astype(np.float32),
                      (view @ proj).astype(np.float32), texel, far - near)


class ShadowMap:
    """A square depth texture and framebuffer, ``resolution`` texels a side."""

    def __init__(self, ctx: moderngl.Context, resolution: int = 1024,
                 floor_resolution: int = 64) -> None:
        for name, value in (("resolution", resolution), ("floor_resolution", floor_resolution)):
            if value < 16:
                raise ValueError(f"{name}: must be >= 16 texels, got {value}")
        self.ctx = ctx
        self.resolution = int(resolution)
        self.floor_resolution = int(floor_resolution)
        self.texture = ctx.depth_texture((self.resolution, self.resolution))
        self.texture.compare_func = ""                     # raw depth through the texture
        self.texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self.texture.repeat_x = self.texture.repeat_y = False
        self.fbo = ctx.framebuffer(depth_attachment=self.texture)
        self.compare = ctx.sampler(texture=self.texture, repeat_x=False, repeat_y=False,
                                   filter=(moderngl.LINEAR, moderngl.LINEAR),
                                   compare_func="<=")
        size = (self.floor_resolution, self.floor_resolution)
        self.floor_texture = ctx.texture(size, 2)
        self.floor_texture.repeat_x = self.floor_texture.repeat_y = False
        self.floor_fbo = ctx.framebuffer([self.floor_texture])

    def begin(self) -> None:
        """Bind the map for drawing depth into and clear it to the far plane."""
        self.fbo.use()
        self.fbo.clear(depth=1.0)

    def begin_floor(self) -> None:
        """Bind the floor-shadow texture for drawing into (the whole of it)."""
        self.floor_fbo.use()
        self.ctx.viewport = (0, 0, self.floor_resolution, self.floor_resolution)

    def bind(self, compare_unit: int, raw_unit: int, floor_unit: int | None = None) -> None:
        """Bind it for reading: the comparison sampler, the raw texture and (unless
        None) the floor-shadow texture."""
        self.compare.use(compare_unit)
        self.texture.use(raw_unit)
        if floor_unit is not None:
            self.floor_texture.use(floor_unit)

    def unbind(self, compare_unit: int) -> None:
        """Take the comparison sampler off its unit (other code's textures there
        then read with their own settings again)."""
        self.compare.clear(compare_unit)

    def release(self) -> None:
        for obj in (self.floor_fbo, self.floor_texture, self.compare, self.fbo, self.texture):
            obj.release()


class ShadowInputs:
    """What the shadow pass last drew from: arrays (particle positions, collider
    vertices) and a tuple of settings (modes, obstacles, sizes). :meth:`changed`
    says whether the shadow map must be drawn again; copies are kept in arrays of
    their own, re-allocated only when a shape or dtype changes."""

    def __init__(self) -> None:
        self._arrays: list[np.ndarray] = []
        self._settings: tuple | None = None

    def changed(self, arrays: list[np.ndarray], settings: tuple) -> bool:
        """Whether ``arrays`` or ``settings`` differ from the last call's (then they
        are remembered); True on the first call and after :meth:`forget`."""
        same = (self._settings is not None and settings == self._settings
                and len(arrays) == len(self._arrays)
                and all(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
                        for a, b in zip(arrays, self._arrays)))
        if same:
            return False
        kept = []
        for i, a in enumerate(arrays):
            old = self._arrays[i] if i < len(self._arrays) else None
            if old is None or old.shape != a.shape or old.dtype != a.dtype:
                old = np.empty_like(a)
            np.copyto(old, a)
            kept.append(old)
        self._arrays, self._settings = kept, settings
        return True

    def forget(self) -> None:
        """The next :meth:`changed` answers True (the map's contents are not trusted)."""
        self._settings = None
