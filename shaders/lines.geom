#version 330 core
// Wide lines. Core-profile GL may clamp glLineWidth to 1 px, so each segment
// is expanded here into a quad u_width_px pixels wide (square caps of half the
// width make the joints of a polyline look continuous).
//
// Strain colouring happens here too, at no CPU cost: the segment's current
// length comes from its two world-space endpoints, and its rest length is
// fetched from a static float texture by gl_PrimitiveIDIn (= the spring index,
// since springs are drawn as one GL_LINES call over the spring index buffer).
// A texture was chosen over a per-spring vertex attribute because indexed
// GL_LINES has per-vertex attributes only; a per-spring attribute would need
// the springs' vertices duplicated and re-uploaded every frame.

layout(lines) in;
layout(triangle_strip, max_vertices = 4) out;

in vec3 v_world[];

uniform vec2 u_viewport;        // framebuffer size, px
uniform float u_width_px;       // line width, px
uniform vec3 u_color;           // sRGB, used when u_strain is false
uniform bool u_strain;          // colour by strain (l - L) / L
uniform float u_strain_scale;   // strain at which the colour is saturated
uniform sampler2D u_rest;       // rest lengths (m), row-major, R32F

flat out vec3 g_color;
out float g_across;             // -1 .. 1 across the line

const vec3 REST_GREY = vec3(0.72, 0.72, 0.74);
const vec3 STRETCH_RED = vec3(0.98, 0.16, 0.10);
const vec3 COMPRESS_BLUE = vec3(0.12, 0.42, 1.00);

vec3 strain_color(float strain) {
    float t = clamp(strain / u_strain_scale, -1.0, 1.0);
    return t >= 0.0 ? mix(REST_GREY, STRETCH_RED, t) : mix(REST_GREY, COMPRESS_BLUE, -t);
}

void emit(vec4 clip, vec2 offset_px, float across) {
    // pixels -> NDC (x2/viewport) -> clip space (x w)
    gl_Position = clip + vec4(offset_px * 2.0 / u_viewport * clip.w, 0.0, 0.0);
    g_across = across;
    EmitVertex();
}

void main() {
    vec4 a = gl_in[0].gl_Position;
    vec4 b = gl_in[1].gl_Position;

    // Clip against the near plane (z >= -w) so the perspective divide is safe.
    float da = a.z + a.w;
    float db = b.z + b.w;
    if (da < 0.0 && db < 0.0) return;
    if (da < 0.0) a = mix(a, b, da / (da - db));
    if (db < 0.0) b = mix(b, a, db / (db - da));

    vec3 color = u_color;
    if (u_strain) {
        int cols = textureSize(u_rest, 0).x;
        int id = gl_PrimitiveIDIn;
        float rest = texelFetch(u_rest, ivec2(id % cols, id / cols), 0).r;
        if (rest > 0.0) color = strain_color((distance(v_world[0], v_world[1]) - rest) / rest);
    }

    vec2 sa = a.xy / a.w * u_viewport * 0.5;
    vec2 sb = b.xy / b.w * u_viewport * 0.5;
    vec2 d = sb - sa;
    float len = length(d);
    vec2 dir = len > 1e-6 ? d / len : vec2(1.0, 0.0);
    vec2 side = vec2(-dir.y, dir.x) * (0.5 * u_width_px);
    vec2 cap = dir * (0.5 * u_width_px);

    g_color = color;
    emit(a, -cap - side, -1.0);
    g_color = color;
    emit(a, -cap + side, 1.0);
    g_color = color;
    emit(b, cap - side, -1.0);
    g_color = color;
    emit(b, cap + side, 1.0);
    EndPrimitive();
}
