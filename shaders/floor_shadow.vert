#version 330 core
// The floor-shadow pass: one quad over the whole floor-shadow texture.

in vec2 in_corner;     // -1 .. 1
out vec2 v_light_xy;   // light clip-space x, y

void main() {
    v_light_xy = in_corner;
    gl_Position = vec4(in_corner, 0.0, 1.0);
}
