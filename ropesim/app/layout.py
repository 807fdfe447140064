"""Where the viewer's imgui windows sit, and the part of the view they leave free.

Sizes are window pixels (imgui's units); :func:`free_viewport` returns fractions of
the view, so the camera frames the scene into the free part whatever the pixel ratio.

* wide windows (>= ``COLLAPSE_BELOW_PX``): the panel (``PANEL_WIDTH``) on the left,
  the hotkey overlay (``HELP_WIDTH``) on the right;
* narrow windows: the panel collapses to a strip (its title bar) at the top left and
  the overlay is hidden (H still toggles the panel; the strip expands on a click).
"""

from __future__ import annotations

from dataclasses import dataclass

PANEL_WIDTH = 300.0          # px
HELP_WIDTH = 300.0           # px, the hotkey overlay
MARGIN = 10.0                # px between the windows and the window's edge
STRIP_HEIGHT = 26.0          # px, a collapsed panel (its title bar)
COLLAPSE_BELOW_PX = 1000.0   # window width under which the panel collapses to a strip


def collapsed_by_width(window_width: float) -> bool:
    """Whether a window this wide (px) shows the panel as a strip."""
    return window_width < COLLAPSE_BELOW_PX


@dataclass(frozen=True)
class UiLayout:
    """What the imgui windows cover: ``show_ui`` (H), ``panel_collapsed`` (the strip),
    ``window_size`` in window px."""

    window_size: tuple[float, float]
    show_ui: bool = True
    panel_collapsed: bool = False

    @property
    def help_shown(self) -> bool:
        """The hotkey overlay is drawn: the UI is shown and the window is wide."""
        return self.show_ui and not collapsed_by_width(self.window_size[0])

    def free_viewport(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom) of the view the windows leave free, as fractions
        of its width and height (top-left origin, y down)."""
        width, height = (max(float(v), 1.0) for v in self.window_size)
        left, top, right, bottom = 0.0, 0.0, width, height
        if self.show_ui:
            if self.panel_collapsed:
                top = MARGIN + STRIP_HEIGHT + MARGIN
            else:
                left = MARGIN + PANEL_WIDTH + MARGIN
        if self.help_shown:
            right = width - (HELP_WIDTH + 2 * MARGIN)
        if right - left < 0.25 * width:   # windows wider than the view: use all of it
            left, right = 0.0, width
        return left / width, top / height, right / width, bottom / height


__all__ = ["COLLAPSE_BELOW_PX", "HELP_WIDTH", "MARGIN", "PANEL_WIDTH", "STRIP_HEIGHT",
           "UiLayout", "collapsed_by_width"]
