#version 330 core
// Lit triangle meshes: the cloth surface (offset 0, scale 1) and sphere
// obstacles (a unit UV sphere moved to the obstacle's centre and radius).
// Also the depth-only shadow pass (with depth.frag), through u_view_proj.
// With CLOTH defined (the cloth's own program) it also hands the fragments their
// light coordinates (light_space.glsl), so the shadow lookup costs no matrix
// product per pixel.
#ifdef CLOTH
#include "light_space.glsl"
out vec3 v_light;          // light coordinates of v_world
out vec3 v_light_offset;   // their shift by the receiver offset along in_normal
#endif

in vec3 in_position;   // m (cloth), or unit sphere coordinates
in vec3 in_normal;     // unit normal, or zero where undefined
in vec2 in_uv;         // fabric coordinates in grid cells (cloth only)
in float in_strain;    // mean strain of the vertex's springs (strain colouring only)

uniform mat4 u_view_proj;      // world -> clip (the camera's, or the light's)
uniform vec4 u_offset_scale;   // world = xyz + w * in_position (m)

out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
out float v_strain;

void main() {
    v_world = u_offset_scale.xyz + u_offset_scale.w * in_position;
    v_normal = in_normal;
    v_uv = in_uv;
    v_strain = in_strain;
    gl_Position = u_view_proj * vec4(v_world, 1.0);
#ifdef CLOTH
    v_light = light_coords(v_world);
    vec3 n = in_normal * inversesqrt(max(dot(in_normal, in_normal), 1e-24));
    v_light_offset = light_shift(n * receiver_offset_m());
#endif
}
