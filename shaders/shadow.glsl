// Shadows of the key light (lighting.glsl) from a shadow map: the depth of the
// nearest caster seen from the light through an orthographic projection fitted to
// the scene each frame (ropesim.render.shadow). Included by the fragment shaders
// of everything that receives shadows.
//
// shadow_visibility (everything but the floor): one hardware 2x2 comparison
// (bilinear percentage-closer filtering, soft over a texel: a software
// rasteriser pays for every tap, per sample under MSAA); the receiver is pushed
// along its normal by a texel or more first so surfaces do not shadow themselves.
// contact_shadow (the floor): 8 taps over a disc that widens with the distance
// to the caster (a 4-tap blocker search on the raw depth first), and an occlusion term
// that darkens the floor's ambient light close under a caster (contact shading).
// It is costly, so floor_shadow.frag evaluates it once per texel of a small
// texture laid over the shadow map (indexed by the same light coordinates) and
// the floor reads that back with floor_shadow(): one bilinear tap per pixel.

#include "light_space.glsl"

uniform bool u_shadows;                 // false: everything fully lit
uniform sampler2DShadow u_shadow_map;   // depth, compared (LINEAR: 2x2 PCF per tap)
uniform sampler2D u_shadow_depth;       // the same depth, raw (blocker search)
uniform float u_light_depth_m;          // m covered by the light's depth range 0..1
uniform sampler2D u_floor_shadow;       // (visibility, occlusion) of the floor by light uv

const vec2 POISSON[12] = vec2[12](
    vec2(-0.326, -0.406), vec2(-0.840, -0.074), vec2(-0.696, 0.457), vec2(-0.203, 0.621),
    vec2(0.962, -0.195), vec2(0.473, -0.480), vec2(0.519, 0.767), vec2(0.185, -0.893),
    vec2(0.507, 0.064), vec2(0.896, 0.412), vec2(-0.322, -0.933), vec2(-0.792, -0.598));

bool outside_map(vec3 p) {
    return any(lessThan(p, vec3(0.0))) || any(greaterThan(p, vec3(1.0)));
}

float pcf(vec3 p, float radius_texels) {
    vec2 texel = 1.0 / vec2(textureSize(u_shadow_map, 0));
    float sum = 0.0;
    for (int i = 0; i < 8; i++)
        sum += texture(u_shadow_map, vec3(p.xy + POISSON[i] * radius_texels * texel, p.z));
    return sum / 8.0;
}

// p: light coordinates of the receiver, already pushed along its normal by
// receiver_offset_m(); 1 = lit, 0 = in shadow.
float shadow_visibility_at(vec3 p) {
    if (!u_shadows) return 1.0;
    if (outside_map(p)) return 1.0;
    return texture(u_shadow_map, p);
}

// n: unit normal of the receiver (either side); 1 = lit, 0 = in shadow.
float shadow_visibility(vec3 world, vec3 n) {
    return shadow_visibility_at(light_coords(world + n * receiver_offset_m()));
}

// The floor: visibility of the key light, and in occlusion how much of the
// ambient light a nearby caster takes away (0 = none).
float contact_shadow(vec3 world, vec3 n, out float occlusion) {
    occlusion = 0.0;
    if (!u_shadows) return 1.0;
    vec3 p = light_coords(world + n * (1.5 * u_shadow_texel_m));
    if (outside_map(p)) return 1.0;
    vec2 texel = 1.0 / vec2(textureSize(u_shadow_depth, 0));
    float search = 24.0;
    float blockers = 0.0, depth_sum = 0.0;
    for (int i = 0; i < 12; i += 3) {
        float d = texture(u_shadow_depth, p.xy + POISSON[i] * search * texel).r;
        if (d < p.z) { blockers += 1.0; depth_sum += d; }
    }
    if (blockers == 0.0) return 1.0;
    float gap_m = (p.z - depth_sum / blockers) * u_light_depth_m;   // caster above floor
    float gap_texels = gap_m / u_shadow_texel_m;
    float visibility = pcf(p, clamp(1.5 + 0.18 * gap_texels, 1.5, search));
    // Casters far above the floor cast fainter shadows (the sky fills them in).
    float near_caster = exp(-gap_texels / 90.0);
    occlusion = (1.0 - visibility) * near_caster;
    return mix(1.0, visibility, 0.55 + 0.45 * near_caster);
}

// The floor's (visibility, occlusion) at light coordinates uv (light_coords().xy),
// from the texture floor_shadow.frag made. Outside 0..1 the texture's clamped edge
// answers: the light's frustum holds every caster, so its edge is lit.
vec2 floor_shadow(vec2 uv) {
    if (!u_shadows) return vec2(1.0, 0.0);
    return texture(u_floor_shadow, uv).rg;
}
