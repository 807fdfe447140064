#version 330 core
// Lit surfaces: the cloth (two-sided: front and back faces get their own colour
// and the normal is flipped to the side you see), sphere obstacles and rope
// tubes. The cloth carries a fabric pattern computed from its grid coordinates:
// a soft gingham of u_stripe-cell bands and a fine weave of two threads per cell,
// both box-filtered over the pixel's footprint so they fade to their average
// instead of aliasing (no moire) when the cells get small on screen.
// CLOTH defined (the cloth's own program): the pattern is always on, the light
// coordinates come from the vertex shader and a zero vertex normal stays unlit
// by the key light instead of taking the face normal. A software rasteriser runs
// both sides of a branch, so the cloth's program leaves out what it never uses.
#include "lighting.glsl"
#include "shadow.glsl"
#include "strain.glsl"

in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
in float v_strain;
#ifdef CLOTH
in vec3 v_light;
in vec3 v_light_offset;
#endif

uniform vec3 u_front_color;   // sRGB
uniform vec3 u_back_color;    // sRGB
uniform float u_spec;         // highlight strength
uniform bool u_fabric;        // draw the fabric pattern (cloth)
uniform float u_stripe;       // gingham band width, grid cells
uniform bool u_strain;        // colour by v_strain instead of the face colours
uniform float u_ground_y;     // m: ambient darkens within u_contact_m above it
uniform float u_contact_m;    // m, 0 = no contact darkening

out vec4 f_color;

// Average of a 0/1 square wave of period 1 (1 on the second half) over [x - w/2, x + w/2].
float filtered_square(float x, float w) {
    w = max(w, 1e-4);
    float a = x - 0.5 * w, b = x + 0.5 * w;
    float fa = floor(a) * 0.5 + max(fract(a) - 0.5, 0.0);
    float fb = floor(b) * 0.5 + max(fract(b) - 0.5, 0.0);
    return (fb - fa) / w;
}

// Brightness factor of the fabric pattern at grid coordinates uv.
float fabric(vec2 uv) {
    vec2 bands = uv / (2.0 * u_stripe);
    vec2 fw = fwidth(bands);
    float gingham = filtered_square(bands.x, fw.x) + filtered_square(bands.y, fw.y);
    vec2 threads = uv * 2.0;
    vec2 tw = fwidth(threads);
    // over/under: on alternate crossings the u or the v thread is on top
    vec2 cell = floor(threads);
    float u_on_top = mod(cell.x + cell.y, 2.0);
    vec2 across = abs(fract(threads) - 0.5) * 2.0;        // 0 mid-thread, 1 at its edge
    float weave = mix(across.y, across.x, u_on_top);
    float fade = 1.0 - smoothstep(0.35, 0.7, max(tw.x, tw.y));
    return (1.0 - 0.085 * gingham) * (1.0 - 0.10 * fade * weave * weave);
}

void main() {
    vec3 n = v_normal;
#ifdef CLOTH
    n *= inversesqrt(max(dot(n, n), 1e-24));
#else
    if (dot(n, n) < 1e-12) {
        // Degenerate vertex normal: use the flat face normal, in the winding's
        // orientation (counter-clockwise on screen = towards the viewer).
        n = cross(dFdx(v_world), dFdy(v_world));
        if (!gl_FrontFacing) n = -n;
        if (dot(n, n) < 1e-30) n = normalize(u_eye - v_world);
    }
    n = normalize(n);
#endif
    vec3 base = u_front_color;
    if (!gl_FrontFacing) {
        n = -n;
        base = u_back_color;
    }
    if (u_strain) base = strain_color(v_strain);
#ifdef CLOTH
    base *= fabric(v_uv);
    float lit = shadow_visibility_at(v_light + (gl_FrontFacing ? v_light_offset : -v_light_offset));
#else
    if (u_fabric) base *= fabric(v_uv);
    float lit = shadow_visibility(v_world, n);
#endif
    float ao = 1.0;
    if (u_contact_m > 0.0)
        ao = mix(0.45, 1.0, smoothstep(0.0, u_contact_m, v_world.y - u_ground_y));
    f_color = vec4(shade(base, n, v_world, u_spec, 32.0, lit, ao), 1.0);
}
