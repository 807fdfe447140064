"""Rigid colliders (Box, Capsule, Mesh), their BVH and the one-call contact kernel."""

from .shapes import (
    COLLIDER_TYPES, MAX_FRICTION, Box, Capsule, Collider, Mesh, check_friction, is_moving,
    offset_fields, posed_at, rotation_matrix,
)

__all__ = ["COLLIDER_TYPES", "MAX_FRICTION", "Box", "Capsule", "Collider", "Mesh",
           "check_friction", "is_moving", "offset_fields", "posed_at", "rotation_matrix"]
