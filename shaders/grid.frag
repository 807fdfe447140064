#version 330 core
// Anti-aliased grid lines (minor every cell, major every u_major cells) over a
// translucent fill, fading out towards the edge of the plane (mixed with the
// background colour here, so the plane is drawn without blending). Compiled
// with GROUND_LINE (a planar scene's backdrop over a ground seen edge-on), the
// part of the plane below world height u_ground_y is filled more opaquely and
// the ground level gets a line; without it that code is left out (a software
// rasteriser runs both sides of a branch). The plane receives the key light's shadow with contact
// shading (shadow.glsl, floor_shadow.frag): darker and sharper right under a
// caster. Compiled with UNSHADOWED (the floor beyond the light frustum's reach,
// where floor_shadow() would answer fully lit) the lookup is left out.
#include "shadow.glsl"

in vec3 v_world;
in vec2 v_plane;
in vec2 v_corner;
in vec2 v_light;

uniform float u_cell;          // m
uniform float u_major;         // cells per major line
uniform vec3 u_line_color;     // sRGB
uniform vec3 u_fill_color;     // sRGB
uniform float u_fill_alpha;
uniform vec3 u_background;     // sRGB: the plane fades into it (drawn opaque, no blending)
uniform float u_ground_y;      // m

out vec4 f_color;

// 1 on a line of the given pixel width, 0 away from it, at coordinates coord whose
// screen-space rate is fw (fwidth(coord), per pixel); fades out where the lines
// would be denser than about 4 px apart.
float grid_lines(vec2 coord, vec2 fw, float width_px) {
    vec2 dist_px = abs(fract(coord - 0.5) - 0.5) / fw;
    float line = 1.0 - clamp(min(dist_px.x, dist_px.y) - 0.5 * width_px + 0.5, 0.0, 1.0);
    float density = max(fw.x, fw.y);
    return line * (1.0 - smoothstep(0.12, 0.3, density));
}

void main() {
    vec2 cells = v_plane / u_cell;
    vec2 fw = max(fwidth(cells), vec2(1e-6));   // one derivative for both line sets
    float minor = grid_lines(cells, fw, 1.0);
    float major = grid_lines(cells / u_major, fw / u_major, 1.5);
    float line = max(0.45 * minor, 0.9 * major);
    vec3 fill = u_fill_color;
    float fill_alpha = u_fill_alpha;
#ifdef GROUND_LINE
    {
        if (v_world.y < u_ground_y) {
            fill *= 1.5;
            fill_alpha = 0.85;
        }
        float px = abs(v_world.y - u_ground_y) / max(fwidth(v_world.y), 1e-9);
        line = max(line, 1.0 - clamp(px - 1.0, 0.0, 1.0));   // the ground line, 2-3 px
    }
#endif
    float fade = 1.0 - smoothstep(0.55, 1.0, length(v_corner));
    float alpha = mix(fill_alpha, 1.0, line) * fade;
#ifdef UNSHADOWED
    // beyond the light's reach (nothing casts a shadow there): floor_shadow() is (1, 0)
    f_color = vec4(mix(u_background, mix(fill, u_line_color, line), alpha), 1.0);
#else
    vec2 shadow = floor_shadow(v_light);   // (visibility, occlusion)
    float light = mix(0.38, 1.0, shadow.x) * (1.0 - 0.45 * shadow.y);
    alpha = mix(alpha, max(alpha, 0.92 * fade), 1.0 - light);   // shadows stay readable
    f_color = vec4(mix(u_background, mix(fill, u_line_color, line) * light, alpha), 1.0);
#endif
}
