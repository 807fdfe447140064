// Shared lighting, pulled into fragment shaders by an include line naming this file
// (resolved by ropesim.render when the program is built).
//
// Lights are fixed relative to the camera (view space), so whatever way the
// user orbits, the visible side is lit: a warm key light from the upper left,
// a cool fill from the lower right, a sky/ground hemispheric ambient and a
// subtle Blinn-Phong highlight. Colours are sRGB; the maths runs in linear space.

const vec3 KEY_DIR = normalize(vec3(-0.45, 0.70, 0.55));
const vec3 FILL_DIR = normalize(vec3(0.65, -0.25, 0.45));
const vec3 KEY_COLOR = vec3(1.00, 0.95, 0.88);
const vec3 FILL_COLOR = vec3(0.55, 0.65, 0.85);
const vec3 SKY_AMBIENT = vec3(0.22, 0.24, 0.29);
const vec3 GROUND_AMBIENT = vec3(0.09, 0.085, 0.08);

vec3 srgb_to_linear(vec3 c) { return pow(c, vec3(2.2)); }
vec3 linear_to_srgb(vec3 c) { return pow(clamp(c, 0.0, 1.0), vec3(1.0 / 2.2)); }

// base: sRGB albedo; n: unit normal and v: unit direction to the eye, both in
// view space; spec: highlight strength (0 = matte); shininess: Blinn exponent.
vec3 shade(vec3 base, vec3 n, vec3 v, float spec, float shininess) {
    vec3 albedo = srgb_to_linear(base);
    float key = max(dot(n, KEY_DIR), 0.0);
    float fill = max(dot(n, FILL_DIR), 0.0);
    vec3 ambient = mix(GROUND_AMBIENT, SKY_AMBIENT, 0.5 + 0.5 * n.y);
    vec3 color = albedo * (ambient + 1.05 * key * KEY_COLOR + 0.3 * fill * FILL_COLOR);
    vec3 h = normalize(KEY_DIR + v);
    color += spec * KEY_COLOR * pow(max(dot(n, h), 0.0), shininess) * step(0.0, dot(n, KEY_DIR));
    return linear_to_srgb(color);
}
