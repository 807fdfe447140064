#version 330 core
// Wide lines without a geometry shader: one instance of a 4-vertex strip per
// segment, its ends fetched by particle index (positions.glsl), expanded in
// screen space to u_width_px pixels across (square caps of half the width make
// the joints of a polyline look continuous). Core-profile GL may clamp
// glLineWidth to 1 px, hence quads.
//
// Colour: u_color, or by strain (l - L) / L from the current and rest lengths,
// or (axes) u_palette[gl_InstanceID].
#include "positions.glsl"
#include "strain.glsl"

in vec2 in_corner;     // (end 0/1, side -1/+1)
in uvec2 in_ends;      // per instance: the segment's particles
in float in_rest;      // per instance: rest length, m

uniform mat4 u_view_proj;
uniform vec2 u_viewport;     // framebuffer size, px
uniform float u_width_px;    // line width, px
uniform int u_color_mode;    // 0: u_color, 1: strain, 2: u_palette by instance
uniform vec3 u_color;        // sRGB
uniform vec3 u_palette[3];   // sRGB

flat out vec3 v_color;
out float v_across;          // -1 .. 1 across the line

void main() {
    vec3 pa = particle_position(in_ends.x);
    vec3 pb = particle_position(in_ends.y);
    vec4 a = u_view_proj * vec4(pa, 1.0);
    vec4 b = u_view_proj * vec4(pb, 1.0);
    // Clip against the near plane (z >= -w) so the perspective divide is safe.
    float da = a.z + a.w;
    float db = b.z + b.w;
    if (da < 0.0 && db < 0.0) {
        gl_Position = vec4(2.0, 2.0, 2.0, 1.0);   // outside: the strip is dropped
        v_color = vec3(0.0);
        v_across = 0.0;
        return;
    }
    if (da < 0.0) a = mix(a, b, da / (da - db));
    if (db < 0.0) b = mix(b, a, db / (db - da));

    v_color = u_color;
    if (u_color_mode == 1 && in_rest > 0.0)
        v_color = strain_color((distance(pa, pb) - in_rest) / in_rest);
    else if (u_color_mode == 2)
        v_color = u_palette[gl_InstanceID];

    vec2 sa = a.xy / a.w * u_viewport * 0.5;
    vec2 sb = b.xy / b.w * u_viewport * 0.5;
    vec2 d = sb - sa;
    float len = length(d);
    vec2 dir = len > 1e-6 ? d / len : vec2(1.0, 0.0);
    vec2 side = vec2(-dir.y, dir.x) * (0.5 * u_width_px);
    vec2 cap = dir * (0.5 * u_width_px);
    vec4 clip = in_corner.x < 0.5 ? a : b;
    vec2 offset_px = (in_corner.x < 0.5 ? -cap : cap) + in_corner.y * side;
    // pixels -> NDC (x2/viewport) -> clip space (x w)
    gl_Position = clip + vec4(offset_px * 2.0 / u_viewport * clip.w, 0.0, 0.0);
    v_across = in_corner.y;
}
