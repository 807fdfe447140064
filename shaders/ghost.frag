#version 330 core
// Flat translucent colour; surfaces shaded by their screen-space facet normal
// (no normals are uploaded for the ghost).

in vec3 v_world;

uniform vec3 u_color;        // sRGB
uniform float u_alpha;       // 0..1
uniform bool u_shade;        // triangles: shade by the facet normal
uniform vec3 u_light_dir;    // unit, towards the light

out vec4 f_color;

void main() {
    float light = 1.0;
    if (u_shade) {
        vec3 n = normalize(cross(dFdx(v_world), dFdy(v_world)));
        light = 0.55 + 0.45 * abs(dot(n, u_light_dir));
    }
    f_color = vec4(u_color * light, u_alpha);
}
