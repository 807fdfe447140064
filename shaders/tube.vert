#version 330 core
// Springs as lit tubes: one instance of an open cylinder per spring, from the
// position of one end particle to the other (fetched by index), u_radius_m
// thick but never thinner than u_min_px pixels on screen. Sphere impostors of
// the same radius (particles.vert) close the joints. Feeds surface.frag, or
// depth.frag in the shadow pass (u_view_proj is then the light's and the
// pixel minimum is off).
#include "positions.glsl"

in vec3 in_ring;       // (cos a, sin a, t): a point on the unit cylinder, t 0..1 along it
in uvec2 in_ends;      // per instance: the spring's particles
in float in_rest;      // per instance: rest length, m

uniform mat4 u_view_proj;
uniform float u_radius_m;        // tube radius, m
uniform float u_min_px;          // smallest diameter, px (0: none)
uniform float u_px_per_m_at_1m;  // pixels per metre at 1 m depth (proj[1][1] * height / 2)
uniform vec3 u_eye;              // m
uniform vec3 u_forward;          // unit view direction

out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
out float v_strain;

void main() {
    vec3 a = particle_position(in_ends.x);
    vec3 b = particle_position(in_ends.y);
    vec3 axis = b - a;
    float len = length(axis);
    vec3 w = len > 1e-12 ? axis / len : vec3(0.0, 1.0, 0.0);
    // any unit vector perpendicular to w, continuous except at one direction
    vec3 helper = abs(w.y) < 0.9 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
    vec3 e1 = normalize(cross(helper, w));
    vec3 e2 = cross(w, e1);
    vec3 center = mix(a, b, in_ring.z);
    float radius = u_radius_m;
    if (u_min_px > 0.0) {
        float depth = max(dot(center - u_eye, u_forward), 1e-6);
        radius = max(radius, 0.5 * u_min_px * depth / u_px_per_m_at_1m);
    }
    v_normal = in_ring.x * e1 + in_ring.y * e2;
    v_world = center + radius * v_normal;
    v_uv = vec2(0.0);
    v_strain = in_rest > 0.0 ? (len - in_rest) / in_rest : 0.0;
    gl_Position = u_view_proj * vec4(v_world, 1.0);
}
