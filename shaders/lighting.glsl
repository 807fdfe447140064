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

vec3 srgb_to_linear(vec3 c) { return pow(c, vec3(2.2)); }
vec3 linear_to_srgb(vec3 c) { return pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)); }

// base: sRGB albedo; n: unit normal facing the viewer; world: the point, m;
// spec: highlight strength (0 = matte); shininess: Blinn exponent; lit: 0..1
// visibility of the key light (shadow); ao: 0..1 ambient occlusion.
vec3 shade(vec3 base, vec3 n, vec3 world, float spec, float shininess, float lit, float ao) {
    vec3 albedo = srgb_to_linear(base);
    vec3 v = normalize(u_eye - world);
    float key = max(dot(n, u_light_dir), 0.0) * lit;
    float head = max(dot(n, v), 0.0);
    vec3 ambient = mix(FLOOR_AMBIENT, SKY_AMBIENT, 0.5 + 0.5 * n.y) * ao;
    vec3 color = albedo * (ambient + 0.95 * key * KEY_COLOR + 0.32 * head * HEAD_COLOR);
    vec3 h = normalize(u_light_dir + v);
    color += spec * lit * KEY_COLOR * pow(max(dot(n, h), 0.0), shininess)
             * step(0.0, dot(n, u_light_dir));
    return linear_to_srgb(color);
}
