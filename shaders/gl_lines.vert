#version 330 core
// Springs as GL_LINES of the rasteriser's own width (glLineWidth): two vertices a
// spring straight from the position buffer, no texture fetches and no quad (the
// cheap path for thin lines in one colour; lines.vert draws the others).

in vec3 in_position;   // m

uniform mat4 u_view_proj;

void main() {
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
