#version 330 core
// Round, shaded point sprites (sphere impostors, sprite.glsl), lit and shadowed
// like the meshes; the rim is blended over a one-pixel band for smooth edges.
#include "lighting.glsl"
#include "shadow.glsl"
#include "sprite.glsl"

flat in vec3 v_color;
flat in float v_size_px;

uniform mat4 u_view;
uniform mat4 u_proj;
uniform float u_spec;

out vec4 f_color;

void main() {
    float r2;
    vec3 n = sprite_sphere(u_proj, r2);
    // view -> world: the view matrix is a rigid motion
    mat3 rot = transpose(mat3(u_view));
    vec3 n_world = rot * n;
    vec3 world = rot * (v_center + v_radius * n - u_view[3].xyz);
    float edge = 2.0 / max(v_size_px, 1.0);          // one pixel, in sprite units
    float alpha = 1.0 - smoothstep(1.0 - edge, 1.0, sqrt(r2));
    float lit = shadow_visibility(world, n_world);
    f_color = vec4(shade(v_color, n_world, world, u_spec, 32.0, lit, 1.0), alpha);
}
