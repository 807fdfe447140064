#version 330 core
// Wide-line fragments, darkened towards the edges so they read as round tubes.

flat in vec3 v_color;
in float v_across;

out vec4 f_color;

void main() {
    float bulge = sqrt(max(1.0 - v_across * v_across, 0.0));
    f_color = vec4(v_color * (0.6 + 0.4 * bulge), 1.0);
}
