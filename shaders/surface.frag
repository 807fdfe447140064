#version 330 core
// Two-sided lit surface: front and back faces get different colours, and the
// normal is flipped on back faces so both sides are lit like the side you see.
#include "lighting.glsl"

in vec3 v_view_pos;
in vec3 v_view_normal;

uniform vec3 u_front_color;   // sRGB
uniform vec3 u_back_color;    // sRGB
uniform float u_spec;         // highlight strength

out vec4 f_color;

void main() {
    vec3 n = v_view_normal;
    if (dot(n, n) < 1e-12) {
        // Degenerate vertex normal: use the flat face normal, in the winding's
        // orientation (counter-clockwise on screen = towards the viewer).
        n = cross(dFdx(v_view_pos), dFdy(v_view_pos));
        if (!gl_FrontFacing) n = -n;
        if (dot(n, n) < 1e-30) n = vec3(0.0, 0.0, 1.0);
    }
    n = normalize(n);
    vec3 base = u_front_color;
    if (!gl_FrontFacing) {
        n = -n;
        base = u_back_color;
    }
    vec3 v = normalize(-v_view_pos);
    f_color = vec4(shade(base, n, v, u_spec, 48.0), 1.0);
}
