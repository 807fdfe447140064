#version 330 core
// Particles as point sprites whose size follows perspective: a sphere of world
// radius u_radius_m covers radius * P[1][1] * viewport_height / w pixels (w = 1
// under the light's orthographic projection in the shadow pass). Pinned,
// hovered and grabbed particles are drawn larger, in their palette colours.

in vec3 in_position;   // m
in uint in_flags;      // bit 0 pinned, bit 1 hovered, bit 2 grabbed
in float in_strain;    // mean strain of the particle's springs (strain colouring only)

uniform mat4 u_view;
uniform mat4 u_proj;
uniform vec2 u_viewport;       // px
uniform float u_radius_m;      // particle radius, m
uniform float u_min_px;        // smallest sprite diameter, px
uniform float u_plain_scale;   // size of unflagged particles relative to u_radius_m
uniform vec3 u_palette[4];     // sRGB: plain, pinned, hovered, grabbed
uniform bool u_strain;         // colour unflagged particles by in_strain
#include "strain.glsl"

flat out vec3 v_color;
flat out float v_size_px;
flat out vec3 v_center;      // view space, m (sprite.glsl)
flat out float v_radius;     // m

void main() {
    vec4 view_pos = u_view * vec4(in_position, 1.0);
    v_center = view_pos.xyz;
    gl_Position = u_proj * view_pos;
    float scale = u_plain_scale;
    v_color = u_strain ? strain_color(in_strain) : u_palette[0];
    if ((in_flags & 1u) != 0u) { v_color = u_palette[1]; scale = 1.25; }
    if ((in_flags & 2u) != 0u) { v_color = u_palette[2]; scale = 1.6; }
    if ((in_flags & 4u) != 0u) { v_color = u_palette[3]; scale = 1.6; }
    float w = max(gl_Position.w, 1e-6);
    float px_per_m = u_proj[1][1] * 0.5 * u_viewport.y / w;
    v_size_px = max(2.0 * u_radius_m * scale * px_per_m, u_min_px * scale);
    v_radius = 0.5 * v_size_px / px_per_m;   // the pixel minimum widens the sphere too
    gl_PointSize = v_size_px;
}
