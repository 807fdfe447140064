#version 330 core
// 2-D overlay lines (the cut stroke, the wind arrow) in framebuffer pixels,
// top-left origin, y down.

uniform vec2 u_viewport;   // framebuffer width, height, px

in vec2 in_pixel;
in vec4 in_color;

out vec4 v_color;

void main() {
    vec2 ndc = vec2(2.0 * in_pixel.x / u_viewport.x - 1.0, 1.0 - 2.0 * in_pixel.y / u_viewport.y);
    gl_Position = vec4(ndc, 0.0, 1.0);
    v_color = in_color;
}
