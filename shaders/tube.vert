#version 330 core
// Springs as lit tubes: an open cylinder of u_segments sides per spring, from
// the position of one end particle to the other (springs.glsl), u_radius_m
// thick but never thinner than u_min_px pixels on screen. Sphere impostors of
// the same radius (particles.vert) close the joints. Feeds surface.frag, or
// depth.frag in the shadow pass (u_view_proj is then the light's and the
// pixel minimum is off). Vertex corner = ring * (u_segments + 1) + side: ring 0
// at the first particle, ring 1 at the second.
#include "springs.glsl"

uniform mat4 u_view_proj;
uniform float u_radius_m;        // tube radius, m
uniform float u_min_px;          // smallest diameter, px (0: none)
uniform float u_px_per_m_at_1m;  // pixels per metre at 1 m depth (proj[1][1] * height / 2)
uniform vec3 u_eye;              // m
uniform vec3 u_forward;          // unit view direction
uniform int u_segments;          // sides of the cylinder

out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;
out float v_strain;

void main() {
    vec3 a, b;
    float rest;
    int corner;
    spring_of_vertex(a, b, rest, corner);
    int ring = corner / (u_segments + 1);
    float angle = 6.283185307 * float(corner - ring * (u_segments + 1)) / float(u_segments);
    vec3 axis = b - a;
    float len = length(axis);
    vec3 w = len > 1e-12 ? axis / len : vec3(0.0, 1.0, 0.0);
    // any unit vector perpendicular to w, continuous except at one direction
    vec3 helper = abs(w.y) < 0.9 ? vec3(0.0, 1.0, 0.0) : vec3(1.0, 0.0, 0.0);
    vec3 e1 = normalize(cross(helper, w));
    vec3 e2 = cross(w, e1);
    vec3 center = ring == 0 ? a : b;
    float radius = u_radius_m;
    if (u_min_px > 0.0) {
        float depth = max(dot(center - u_eye, u_forward), 1e-6);
        radius = max(radius, 0.5 * u_min_px * depth / u_px_per_m_at_1m);
    }
    v_normal = cos(angle) * e1 + sin(angle) * e2;
    v_world = center + radius * v_normal;
    v_uv = vec2(0.0);
    v_strain = rest > 0.0 ? (len - rest) / rest : 0.0;
    gl_Position = u_view_proj * vec4(v_world, 1.0);
}
