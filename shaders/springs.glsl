// Springs drawn without instancing or a geometry shader: one draw over a static
// index buffer whose vertex ids encode (spring, corner) as
// spring * u_vertices_per_spring + corner. Each vertex fetches its spring's two
// particle indices from u_springs, its rest length from u_rest and the
// particles' current positions from u_positions: textures the renderer keeps,
// row-major with at most 4096 columns (positions are refreshed every frame).
// (Instancing would do the same, but a software rasteriser runs a tiny draw per
// instance; one draw of many vertices keeps its vertex shader vectorised.)

uniform sampler2D u_positions;     // xyz = position, m
uniform usampler2D u_springs;      // r, g = particle indices
uniform sampler2D u_rest;          // r = rest length, m
uniform int u_vertices_per_spring;

ivec2 texel_of(int index, int cols) { return ivec2(index % cols, index / cols); }

vec3 particle_position(uint index) {
    return texelFetch(u_positions, texel_of(int(index), textureSize(u_positions, 0).x), 0).xyz;
}

// The spring this vertex belongs to: its end positions and rest length; corner is
// the vertex's number within the spring (0 .. u_vertices_per_spring - 1).
void spring_of_vertex(out vec3 a, out vec3 b, out float rest, out int corner) {
    int spring = gl_VertexID / u_vertices_per_spring;
    corner = gl_VertexID - spring * u_vertices_per_spring;
    ivec2 texel = texel_of(spring, textureSize(u_springs, 0).x);
    uvec2 ends = texelFetch(u_springs, texel, 0).rg;
    a = particle_position(ends.x);
    b = particle_position(ends.y);
    rest = texelFetch(u_rest, texel, 0).r;
}
