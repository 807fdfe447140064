// Point sprites standing in for spheres: the unit normal of the sphere at this
// fragment (view space; fragments outside the circle are discarded) and the
// sphere's depth written for it, so springs and tubes disappear into the ball
// rather than through a flat disc.

flat in vec3 v_center;     // view space, m
flat in float v_radius;    // m

// Returns the view-space normal and writes gl_FragDepth; r2 = squared distance
// from the sprite centre in sprite units.
vec3 sprite_sphere(mat4 proj, out float r2) {
    vec2 p = gl_PointCoord * 2.0 - 1.0;
    p.y = -p.y;                       // gl_PointCoord has y pointing down
    r2 = dot(p, p);
    if (r2 > 1.0) discard;
    vec3 n = vec3(p, sqrt(1.0 - r2));
    vec4 clip = proj * vec4(v_center + v_radius * n, 1.0);
    gl_FragDepth = 0.5 + 0.5 * clip.z / clip.w;     // default depth range [0, 1]
    return n;
}
