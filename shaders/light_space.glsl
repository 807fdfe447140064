// The key light's space (ropesim.render.shadow): world -> shadow-map coordinates.
// Included by shadow.glsl and by vertex shaders that hand light coordinates to
// their fragments: the light's projection is orthographic, so the map is affine
// and coordinates computed per vertex interpolate exactly (a software rasteriser
// then saves a matrix product per pixel, and per sample under MSAA).

uniform mat4 u_light_vp;                // world -> light clip space
uniform float u_shadow_texel_m;         // m covered by one shadow-map texel
uniform float u_receiver_bias_m;        // extra normal offset, m (coarse casters)

// Light-space texture coordinates (xy) and depth (z) of a world point, 0..1 inside.
vec3 light_coords(vec3 world) {
    vec4 c = u_light_vp * vec4(world, 1.0);
    return c.xyz / c.w * 0.5 + 0.5;
}

// How far (m) a receiver is pushed along its normal before the shadow lookup, so
// surfaces do not shadow themselves.
float receiver_offset_m() {
    return 1.5 * u_shadow_texel_m + u_receiver_bias_m;
}

// The light-space shift of moving a world point by the vector d (m): the linear
// part of light_coords.
vec3 light_shift(vec3 d) {
    return 0.5 * (mat3(u_light_vp) * d);
}
