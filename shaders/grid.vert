#version 330 core
// A reference grid on a plane: origin + x * axis_u + y * axis_v for the unit
// quad corners (x, y) in [-1, 1]. Grid lines sit at world coordinates that are
// multiples of the cell size along the two (unit) plane directions.

#include "light_space.glsl"

in vec2 in_corner;

uniform mat4 u_view_proj;
uniform vec3 u_origin;     // m, plane centre
uniform vec3 u_axis_u;     // m, half extent along the first plane direction
uniform vec3 u_axis_v;     // m, half extent along the second plane direction

out vec3 v_world;
out vec2 v_plane;          // world coordinates along the two directions, m
out vec2 v_corner;
out vec2 v_light;          // light-space texture coordinates of v_world (shadows)

void main() {
    v_world = u_origin + in_corner.x * u_axis_u + in_corner.y * u_axis_v;
    v_plane = vec2(dot(v_world, normalize(u_axis_u)), dot(v_world, normalize(u_axis_v)));
    v_corner = in_corner;
    v_light = light_coords(v_world).xy;
    gl_Position = u_view_proj * vec4(v_world, 1.0);
}
