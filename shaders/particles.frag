#version 330 core
// Round, shaded point sprites: pixels outside the circle are discarded, the
// rest are lit with the normal of the sphere they stand in for and get that
// sphere's depth (so springs disappear into the ball, not through a flat disc);
// the rim is blended over a one-pixel band for smooth edges.
#include "lighting.glsl"

flat in vec3 v_color;
flat in float v_size_px;
flat in int v_hidden;
flat in vec3 v_center;
flat in float v_radius;

uniform mat4 u_proj;

out vec4 f_color;

void main() {
    if (v_hidden == 1) discard;
    vec2 p = gl_PointCoord * 2.0 - 1.0;
    p.y = -p.y;                       // gl_PointCoord has y pointing down
    float r2 = dot(p, p);
    if (r2 > 1.0) discard;
    vec3 n = vec3(p, sqrt(1.0 - r2));
    vec4 clip = u_proj * vec4(v_center + v_radius * n, 1.0);
    gl_FragDepth = 0.5 + 0.5 * clip.z / clip.w;     // default depth range [0, 1]
    float edge = 2.0 / max(v_size_px, 1.0);          // one pixel, in sprite units
    float alpha = 1.0 - smoothstep(1.0 - edge, 1.0, sqrt(r2));
    f_color = vec4(shade(v_color, n, vec3(0.0, 0.0, 1.0), 0.45, 40.0), alpha);
}
