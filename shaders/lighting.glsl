// Shared lighting, pulled into fragment shaders by an include line naming this file
// (resolved by ropesim.render when the program is built).
//
// World space throughout. A warm key light shines from the fixed world direction
// u_light_dir (towards the light, from above); it is the light that casts the
// shadows (shadow.glsl). A dim cool head light sits at the eye, so whatever way the
// user orbits the visible side never turns black, and a sky/floor hemisphere gives
// the ambient term. Colours are sRGB; the maths runs in linear space.

uniform vec3 u_light_dir;   // unit vector towards the key light (world)
uniform vec3 u_eye;         // camera position, m (world)

const vec3 KEY_COLOR = vec3(1.00, 0.95, 0.87);
const vec3 HEAD_COLOR = vec3(0.62, 0.70, 0.86);
const vec3 SKY_AMBIENT = vec3(0.25, 0.28, 0.34);
const vec3 FLOOR_AMBIENT = vec3(0.10, 0.095, 0.09);

// Gamma 2 stands in for sRGB's 2.2 (a square and a square root are much cheaper
// than pow on a software rasteriser, which runs this per sample under MSAA).
vec3 srgb_to_linear(vec3 c) { return c * c; }
vec3 linear_to_srgb(vec3 c) { return sqrt(clamp(c, 0.0, 1.0)); }

// base: sRGB albedo; n: unit normal facing the viewer; world: the point, m;
// spec: highlight strength (0 = matte); shininess: Blinn exponent, rounded to a
// power of two (16, 32 or 64: repeated squaring instead of pow); lit: 0..1
// visibility of the key light (shadow); ao: 0..1 ambient occlusion.
vec3 shade(vec3 base, vec3 n, vec3 world, float spec, float shininess, float lit, float ao) {
    vec3 albedo = srgb_to_linear(base);
    vec3 v = normalize(u_eye - world);
    float key = max(dot(n, u_light_dir), 0.0) * lit;
    float head = max(dot(n, v), 0.0);
    vec3 ambient = mix(FLOOR_AMBIENT, SKY_AMBIENT, 0.5 + 0.5 * n.y) * ao;
    vec3 color = albedo * (ambient + 0.95 * key * KEY_COLOR + 0.32 * head * HEAD_COLOR);
    vec3 h = normalize(u_light_dir + v);
    float highlight = max(dot(n, h), 0.0);
    highlight *= highlight;    // ^2
    highlight *= highlight;    // ^4
    highlight *= highlight;    // ^8
    highlight *= highlight;    // ^16
    if (shininess > 24.0) highlight *= highlight;   // ^32
    if (shininess > 48.0) highlight *= highlight;   // ^64
    color += spec * lit * KEY_COLOR * highlight * step(0.0, dot(n, u_light_dir));
    return linear_to_srgb(color);
}
