#version 330 core
// Shadow pass for point sprites: only the depth of the sphere each one stands for.
#include "sprite.glsl"

uniform mat4 u_proj;

void main() {
    float r2;
    sprite_sphere(u_proj, r2);
}
