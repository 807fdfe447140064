#version 330 core
// The ghost of a what-if branch: the original run's positions, drawn translucent.

in vec3 in_position;   // m

uniform mat4 u_view_proj;   // world -> clip

out vec3 v_world;

void main() {
    v_world = in_position;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
