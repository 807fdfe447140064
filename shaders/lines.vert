#version 330 core
// Wide lines without a geometry shader: a quad of 4 vertices per spring
// (springs.glsl; corner = 2 * end + side), expanded in screen space to
// u_width_px pixels across (square caps of half the width make the joints of a
// polyline look continuous). Core-profile GL may clamp glLineWidth to 1 px,
// hence quads.
//
// Colour: u_color, or by strain (l - L) / L from the current and rest lengths,
// or (axes) u_palette[spring].
#include "springs.glsl"
#include "strain.glsl"

uniform mat4 u_view_proj;
uniform vec2 u_viewport;     // framebuffer size, px
uniform float u_width_px;    // line width, px
uniform int u_color_mode;    // 0: u_color, 1: strain, 2: u_palette by spring
uniform vec3 u_color;        // sRGB
uniform vec3 u_palette[3];   // sRGB

flat out vec3 v_color;
out float v_across;          // -1 .. 1 across the line

void main() {
    vec3 pa, pb;
    float rest;
    int corner;
    spring_of_vertex(pa, pb, rest, corner);
    int end = corner / 2;
    float side = corner - 2 * end == 0 ? -1.0 : 1.0;
    vec4 a = u_view_proj * vec4(pa, 1.0);
    vec4 b = u_view_proj * vec4(pb, 1.0);
    // Clip against the near plane (z >= -w) so the perspective divide is safe.
    float da = a.z + a.w;
    float db = b.z + b.w;
    if (da < 0.0 && db < 0.0) {
        gl_Position = vec4(2.0, 2.0, 2.0, 1.0);   // outside: the quad is dropped
        v_color = vec3(0.0);
        v_across = 0.0;
        return;
    }
    if (da < 0.0) a = mix(a, b, da / (da - db));
    if (db < 0.0) b = mix(b, a, db / (db - da));

    v_color = u_color;
    if (u_color_mode == 1 && rest > 0.0)
        v_color = strain_color((distance(pa, pb) - rest) / rest);
    else if (u_color_mode == 2)
        v_color = u_palette[gl_VertexID / u_vertices_per_spring];

    vec2 sa = a.xy / a.w * u_viewport * 0.5;
    vec2 sb = b.xy / b.w * u_viewport * 0.5;
    vec2 d = sb - sa;
    float len = length(d);
    vec2 dir = len > 1e-6 ? d / len : vec2(1.0, 0.0);
    vec2 across = vec2(-dir.y, dir.x) * (0.5 * u_width_px);
    vec2 cap = dir * (0.5 * u_width_px);
    vec4 clip = end == 0 ? a : b;
    vec2 offset_px = (end == 0 ? -cap : cap) + side * across;
    // pixels -> NDC (x2/viewport) -> clip space (x w)
    gl_Position = clip + vec4(offset_px * 2.0 / u_viewport * clip.w, 0.0, 0.0);
    v_across = side;
}
