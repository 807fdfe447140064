"""Offscreen targets: draw a :class:`~ropesim.render.renderer.Renderer` into a framebuffer
of its own and read the pixels back, with or without a window.

The viewer's screenshots and videos (fixed size, whatever the window's size) and
headless rendering (an EGL context from :func:`create_headless_context`) both go
through :class:`FrameGrabber`. Pixels come back as (height, width, 3) uint8 sRGB,
top row first.
"""

from __future__ import annotations

from typing import Any, Sequence

import moderngl
import numpy as np

Color = Sequence[float]


def clamp_samples(ctx: moderngl.Context, samples: int) -> int:
    """Requested MSAA samples clamped to what the context supports."""
    if samples not in (0, 1, 2, 3, 4):
        raise ValueError(f"samples: must be 0..4, got {samples}")
    return min(int(samples), int(ctx.max_samples)) if samples > 1 else 0


class OffscreenTarget:
    """An RGBA8 + depth framebuffer of width x height px, optionally multisampled.

    ``samples`` 0 or 1 means no MSAA; 2..4 are clamped to the context's limit.
    A multisampled target is resolved into a plain one before reading.
    """

    def __init__(self, ctx: moderngl.Context, width: int, height: int, samples: int = 4) -> None:
        if int(width) < 1 or int(height) < 1:
            raise ValueError(f"width, height: must be >= 1 px, got {width}x{height}")
        self.ctx = ctx
        self.width, self.height = int(width), int(height)
        self.samples = clamp_samples(ctx, samples)
        size = (self.width, self.height)
        self._color = ctx.renderbuffer(size, 4, samples=self.samples)
        self._depth = ctx.depth_renderbuffer(size, samples=self.samples)
        self.fbo = ctx.framebuffer([self._color], self._depth)
        self._objects = [self.fbo, self._color, self._depth]
        self._resolve = None
        if self.samples:
            rb = ctx.renderbuffer(size)
            self._resolve = ctx.framebuffer([rb])
            self._objects += [self._resolve, rb]
        self._pixels = np.empty((self.height, self.width, 3), dtype=np.uint8)

    @property
    def size(self) -> tuple[int, int]:
        return self.width, self.height

    def use(self) -> None:
        """Bind this framebuffer for drawing (also sets the viewport to its size)."""
        self.fbo.use()

    def clear(self, color: Color = (0.0, 0.0, 0.0)) -> None:
        """Clear colour to the sRGB ``color`` and depth to 1."""
        c = tuple(color)
        self.fbo.clear(c[0], c[1], c[2], c[3] if len(c) > 3 else 1.0, depth=1.0)

    def resolve_into(self, destination: moderngl.Framebuffer) -> None:
        """Copy the pixels into ``destination`` (a framebuffer of the same size, such
        as a window's), resolving the samples of a multisampled target."""
        self.ctx.copy_framebuffer(destination, self.fbo)

    def read_rgb(self) -> np.ndarray:
        """The pixels as a new (height, width, 3) uint8 array, top row first."""
        src = self.fbo
        if self._resolve is not None:
            self.ctx.copy_framebuffer(self._resolve, self.fbo)
            src = self._resolve
        src.read_into(self._pixels, components=3, alignment=1)
        return self._pixels[::-1].copy()   # GL rows run bottom-up

    def release(self) -> None:
        for obj in self._objects:
            obj.release()
        self._objects = []


class FrameGrabber:
    """Renders frames offscreen and returns them as arrays, keeping one target."""

    def __init__(self, ctx: moderngl.Context, width: int, height: int, samples: int = 4) -> None:
        self.target = OffscreenTarget(ctx, width, height, samples)
        self.width, self.height = self.target.size

    def grab(self, renderer: Any, camera: Any, options: Any = None) -> np.ndarray:
        """Draw one frame with ``renderer.draw(camera, width, height, options)`` (a
        Renderer and its RenderOptions) and return it as (height, width, 3) uint8, top
        row first.

        The framebuffer bound before the call is bound again afterwards.
        """
        previous = renderer.ctx.fbo
        self.target.use()
        renderer.draw(camera, self.width, self.height, options)
        pixels = self.target.read_rgb()
        # A standalone context may have had none bound, or one since released.
        if previous is not None and not isinstance(previous.mglo, moderngl.InvalidObject):
            previous.use()
        return pixels

    def release(self) -> None:
        self.target.release()


def render_frame(ctx: moderngl.Context, renderer: Any, camera: Any, width: int,
                 height: int, options: Any = None, samples: int = 4) -> np.ndarray:
    """Render one (height, width, 3) uint8 frame offscreen, top row first.

    The offscreen target is kept by the renderer and reused while the size stays
    the same, so calling this in a loop does not re-create framebuffers.
    """
    if renderer.ctx is not ctx:
        raise ValueError("render_frame: the renderer was built for a different context")
    return renderer.frame_grabber(width, height, samples).grab(renderer, camera, options)


def create_headless_context(require: int = 330) -> moderngl.Context:
    """A standalone EGL OpenGL context (no window, no display) of at least GL 3.3."""
    try:
        return moderngl.create_standalone_context(require=require, backend="egl")
    except Exception as exc:  # moderngl/glcontext raise several types
        cause = " ".join(str(exc).split()) or type(exc).__name__
        raise RuntimeError(
            f"no headless OpenGL {require // 100}.{require % 100 // 10} context via EGL "
            f"({cause}); install an EGL driver (e.g. Mesa: apt install libegl1 libgl1-mesa-dri) "
            "or run on a machine with a GPU driver"
        ) from None


__all__ = ["OffscreenTarget", "FrameGrabber", "create_headless_context", "render_frame",
           "clamp_samples"]
