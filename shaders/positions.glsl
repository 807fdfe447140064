// Particle positions (m) from the float RGB texture the renderer refreshes each
// frame (row-major by particle index, at most 4096 columns): springs drawn with
// instancing fetch both ends here by index.

uniform sampler2D u_positions;

vec3 particle_position(uint index) {
    int cols = textureSize(u_positions, 0).x;
    int i = int(index);
    return texelFetch(u_positions, ivec2(i % cols, i / cols), 0).xyz;
}
