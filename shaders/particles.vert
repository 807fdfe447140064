#version 330 core
// Particles as point sprites whose size follows perspective: a sphere of world
// radius u_radius_m covers radius * P[1][1] * viewport_height / w pixels.

in vec3 in_position;   // m
in uint in_flags;      // bit 0 pinned, bit 1 hovered, bit 2 grabbed

uniform mat4 u_view;
uniform mat4 u_proj;
uniform vec2 u_viewport;       // px
uniform float u_radius_m;      // particle radius, m
uniform float u_min_px;        // smallest sprite diameter, px
uniform bool u_only_flagged;   // draw only pinned / hovered / grabbed particles
uniform float u_plain_scale;   // size of unflagged particles relative to u_radius_m
uniform vec3 u_palette[4];     // sRGB: plain, pinned, hovered, grabbed

flat out vec3 v_color;
flat out float v_size_px;
flat out int v_hidden;
flat out vec3 v_center;      // view space, m
flat out float v_radius;     // m

void main() {
    vec4 view_pos = u_view * vec4(in_position, 1.0);
    v_center = view_pos.xyz;
    gl_Position = u_proj * view_pos;
    float scale = u_plain_scale;
    v_color = u_palette[0];
    if ((in_flags & 1u) != 0u) { v_color = u_palette[1]; scale = 1.25; }
    if ((in_flags & 2u) != 0u) { v_color = u_palette[2]; scale = 1.6; }
    if ((in_flags & 4u) != 0u) { v_color = u_palette[3]; scale = 1.6; }
    v_hidden = (u_only_flagged && in_flags == 0u) ? 1 : 0;
    v_radius = u_radius_m * scale;
    float w = max(gl_Position.w, 1e-6);
    v_size_px = max(2.0 * u_radius_m * scale * u_proj[1][1] * 0.5 * u_viewport.y / w, u_min_px * scale);
    gl_PointSize = v_hidden == 1 ? 1.0 : v_size_px;
}
