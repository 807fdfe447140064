"""The viewer's cut tool: a mouse stroke that breaks every spring it crosses on screen.

The stroke is a polyline in framebuffer pixels (top-left origin, y down). Swept along the
view rays it is a surface in the world; a spring crosses that surface exactly when its
two ends, projected with the camera, give a screen segment that intersects one of the
stroke's segments. So :func:`crossed_springs` projects every particle once (numpy) and
tests every spring against the stroke's segments in one numba kernel. Springs with an
end at or behind the eye plane, touching or collinear segments, and springs already
broken do not count.

:class:`CutTool` holds the stroke being drawn (cut as it grows, so the cloth parts under
the cursor) and the undo stack: each finished stroke remembers the springs it broke, and
:meth:`CutTool.undo` (Ctrl+Z) mends the last stroke's springs
(``Simulation.restore_springs``), unless the network was edited since.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..engine.simulation import Simulation
from ..render.camera import OrbitCamera

#: the tool selector's choices (the panel's combo): left-drag grabs, or cuts
TOOLS = ("grab", "cut")
#: cuts kept for undo
UNDO_DEPTH = 32


@njit(cache=True)
def segments_cross(px, py, qx, qy, ax, ay, bx, by):
    """Whether the 2-D segments p-q and a-b cross (px): a proper crossing, each one's
    ends strictly on both sides of the other's line (touching ends and collinear
    overlaps do not count; NaN ends never cross)."""
    side_a = (qx - px) * (ay - py) - (qy - py) * (ax - px)
    side_b = (qx - px) * (by - py) - (qy - py) * (bx - px)
    if not side_a * side_b < 0.0:
        return False
    side_p = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
    side_q = (bx - ax) * (qy - ay) - (by - ay) * (qx - ax)
    return side_p * side_q < 0.0


@njit(cache=True)
def mark_crossed(pixels, spring_a, spring_b, stroke, skip, hit):
    """hit[s] = True for every spring s (not skipped) whose screen segment, ends
    pixels[spring_a[s]] and pixels[spring_b[s]] (px), crosses a segment of the (k, 2)
    stroke polyline (px)."""
    for s in range(spring_a.shape[0]):
        if skip[s] or hit[s]:
            continue
        ax, ay = pixels[spring_a[s], 0], pixels[spring_a[s], 1]
        bx, by = pixels[spring_b[s], 0], pixels[spring_b[s], 1]
        for k in range(stroke.shape[0] - 1):
            if segments_cross(stroke[k, 0], stroke[k, 1], stroke[k + 1, 0], stroke[k + 1, 1],
                              ax, ay, bx, by):
                hit[s] = True
                break


def crossed_springs(camera: OrbitCamera, view_size: tuple[int, int], positions: np.ndarray,
                    spring_a: np.ndarray, spring_b: np.ndarray, stroke: np.ndarray,
                    skip: np.ndarray | None = None) -> np.ndarray:
    """Indices (sorted int64) of the springs whose screen segments cross the stroke.

    camera, view_size : the view, framebuffer (width, height) px.
    positions : (n, 3) particle positions, m; spring_a, spring_b : (m,) spring ends.
    stroke : (k, 2) stroke points, framebuffer px (k >= 2 for a segment).
    skip : optional (m,) bool mask of springs never reported (the broken ones).
    """
    stroke = np.ascontiguousarray(stroke, dtype=np.float64).reshape(-1, 2)
    m = len(spring_a)
    if len(stroke) < 2 or m == 0:
        return np.zeros(0, np.int64)
    pixels, _ = camera.project(positions, *view_size)   # NaN at or behind the eye plane
    hit = np.zeros(m, dtype=np.bool_)
    mark_crossed(pixels, np.asarray(spring_a), np.asarray(spring_b), stroke,
                 hit if skip is None else np.asarray(skip, dtype=np.bool_), hit)
    return np.flatnonzero(hit).astype(np.int64)


class CutTool:
    """The stroke being cut and the undo stack of the last cuts.

    ``tool`` is the left button's tool ("grab" or "cut", the panel's selector; holding X
    cuts with either); ``stroke`` the current stroke's points (px; empty when none);
    ``cut_now`` the springs the current stroke broke so far.
    """

    def __init__(self) -> None:
        self.tool = "grab"
        self.stroke: list[tuple[float, float]] = []
        self.cut_now: list[np.ndarray] = []
        self._undo: list[tuple[int, np.ndarray]] = []   # (topology_version, springs)

    def set_tool(self, name: str) -> None:
        """The left button's tool: one of TOOLS."""
        if name not in TOOLS:
            raise ValueError(f"tool: {name!r} is not a tool; allowed: {', '.join(TOOLS)}")
        self.tool = name

    def attach(self, sim: Simulation) -> None:
        """A new simulation (or a reset, which mends every spring): nothing to undo."""
        self.stroke = []
        self.cut_now = []
        self._undo.clear()

    @property
    def active(self) -> bool:
        """Whether a stroke is being drawn."""
        return bool(self.stroke)

    @property
    def undo_depth(self) -> int:
        """How many cuts Ctrl+Z can still undo."""
        return len(self._undo)

    def begin(self, x: float, y: float) -> None:
        """Start a stroke at framebuffer pixel (x, y)."""
        self.stroke = [(float(x), float(y))]
        self.cut_now = []

    def extend(self, sim: Simulation, camera: OrbitCamera, view_size: tuple[int, int],
               x: float, y: float) -> int:
        """The cursor moved to (x, y): break the springs the new stroke segment crosses;
        returns how many broke."""
        if not self.stroke:
            return 0
        segment = np.array([self.stroke[-1], (float(x), float(y))])
        self.stroke.append((float(x), float(y)))
        springs = sim.springs
        hit = crossed_springs(camera, view_size, sim.positions, springs[:, 0], springs[:, 1],
                              segment, skip=sim.broken)
        if hit.size:
            sim.break_springs(hit)
            self.cut_now.append(hit)
        return int(hit.size)

    def finish(self, sim: Simulation) -> str:
        """End the stroke; it goes on the undo stack if it cut anything. Returns the
        status line."""
        cut = np.concatenate(self.cut_now) if self.cut_now else np.zeros(0, np.int64)
        self.stroke, self.cut_now = [], []
        if not cut.size:
            return "cut: the stroke crossed no spring"
        self._undo.append((sim.topology_version, cut))
        del self._undo[:-UNDO_DEPTH]
        return f"cut {cut.size} springs (Ctrl+Z undoes)"

    def undo(self, sim: Simulation) -> str:
        """Mend the springs of the last cut; returns the status line. An edit of the
        network since (springs added or removed renumber them) empties the stack."""
        if not self._undo:
            return "nothing to undo"
        version, cut = self._undo.pop()
        if version != sim.topology_version:
            self._undo.clear()
            return "nothing to undo: the network was edited since the last cut"
        mended = sim.restore_springs(cut)
        return f"undo: {mended} springs mended"

    def stroke_points(self) -> np.ndarray:
        """(k, 2) the current stroke, px (for the overlay)."""
        return np.array(self.stroke, dtype=np.float64).reshape(-1, 2)


__all__ = ["CutTool", "TOOLS", "UNDO_DEPTH", "crossed_springs", "mark_crossed", "segments_cross"]
