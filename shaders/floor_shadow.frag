#version 330 core
// The floor-shadow pass: for each texel (a light-space direction) find the floor
// point the light ray through it hits and store contact_shadow there as
// (visibility, occlusion), for grid.frag to read with one bilinear tap.
#include "shadow.glsl"

in vec2 v_light_xy;

uniform mat4 u_light_vp_inverse;   // light clip space -> world
uniform vec3 u_plane_point;        // m, a point of the floor (or backdrop)
uniform vec3 u_plane_normal;       // unit, towards the scene

out vec4 f_color;

void main() {
    vec4 a = u_light_vp_inverse * vec4(v_light_xy, -1.0, 1.0);
    vec4 b = u_light_vp_inverse * vec4(v_light_xy, 1.0, 1.0);
    vec3 p0 = a.xyz / a.w;
    vec3 p1 = b.xyz / b.w;
    float along = dot(p1 - p0, u_plane_normal);
    float t = abs(along) > 1e-9 ? dot(u_plane_point - p0, u_plane_normal) / along : -1.0;
    if (t < 0.0 || t > 1.0) {
        f_color = vec4(1.0, 0.0, 0.0, 1.0);    // the floor is outside the light's depth range
        return;
    }
    float occlusion;
    float visibility = contact_shadow(mix(p0, p1, t), u_plane_normal, occlusion);
    f_color = vec4(visibility, occlusion, 0.0, 1.0);
}
