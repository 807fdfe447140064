// Strain colour map: compressed (strain -u_strain_scale) blue, at rest grey,
// stretched (+u_strain_scale) red, linear in between and saturated beyond. The
// three sRGB stops come from ropesim.render.renderer.STRAIN_STOPS (the panel's
// legend reads the same ones through strain_color_stops).

uniform vec3 u_strain_colors[3];   // sRGB at -scale, 0, +scale
uniform float u_strain_scale;      // strain (l - L) / L at which the colour saturates

vec3 strain_color(float strain) {
    float t = clamp(strain / u_strain_scale, -1.0, 1.0);
    return t >= 0.0 ? mix(u_strain_colors[1], u_strain_colors[2], t)
                    : mix(u_strain_colors[1], u_strain_colors[0], -t);
}
