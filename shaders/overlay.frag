#version 330 core
// Flat, translucent overlay colour (sRGB, alpha-blended over the scene).

in vec4 v_color;

out vec4 f_color;

void main() {
    f_color = v_color;
}
