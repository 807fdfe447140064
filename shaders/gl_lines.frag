#version 330 core
// One colour: what lines.frag's rounded shading averages to across a line 2 px wide
// (its two fragments sit halfway to the edges: 0.6 + 0.4 sqrt(0.75)).

uniform vec3 u_color;   // sRGB

out vec4 f_color;

void main() {
    f_color = vec4(u_color * 0.946, 1.0);
}
