#version 330 core
// Lit triangle meshes: the cloth surface (offset 0, scale 1) and sphere
// obstacles (a unit UV sphere moved to the obstacle's centre and radius).

in vec3 in_position;   // m (cloth), or unit sphere coordinates
in vec3 in_normal;     // unit normal, or zero where undefined

uniform mat4 u_view;
uniform mat4 u_proj;
uniform vec4 u_offset_scale;   // world = xyz + w * in_position (m)

out vec3 v_view_pos;
out vec3 v_view_normal;

void main() {
    vec3 world = u_offset_scale.xyz + u_offset_scale.w * in_position;
    vec4 view_pos = u_view * vec4(world, 1.0);
    v_view_pos = view_pos.xyz;
    v_view_normal = mat3(u_view) * in_normal;   // the view matrix is a rigid motion
    gl_Position = u_proj * view_pos;
}
