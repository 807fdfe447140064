"""Self-collision of spring systems: primitives (spheres and rope capsules), rest-shape
tiles with affine-fit certificates (the search for the pairs), a neighbour list with a
skin, and the contact response (docs/collisions.md)."""

from .neighbours import EXCLUDE_FACTOR, SKIN_FACTOR, NeighbourList
from .primitives import Primitives, build_primitives
from .self_contact import (
    DEFAULT_FRICTION, DEFAULT_THICKNESS_FACTOR, ITERATIONS, SelfCollision, default_thickness,
)
from .geometry import segment_distance

__all__ = ["SelfCollision", "NeighbourList", "Primitives", "build_primitives",
           "default_thickness", "segment_distance", "DEFAULT_FRICTION",
           "DEFAULT_THICKNESS_FACTOR", "EXCLUDE_FACTOR", "ITERATIONS", "SKIN_FACTOR"]
