#version 330 core
// Shadow pass: depth only (the shadow map has no colour attachment).

void main() {}
