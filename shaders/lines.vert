#version 330 core
// Springs and axes: pass world positions on to lines.geom, which turns each
// segment into a screen-space quad.

in vec3 in_position;   // m

uniform mat4 u_view;
uniform mat4 u_proj;

out vec3 v_world;

void main() {
    v_world = in_position;
    gl_Position = u_proj * u_view * vec4(in_position, 1.0);
}
