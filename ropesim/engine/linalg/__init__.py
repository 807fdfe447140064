"""Linear solvers of the implicit integrators: Jacobi-preconditioned CG on the spring
list, with the springs' matrix-free operator or with any operator (cg.py), and
multigrid-preconditioned CG on structured grids (multigrid.py)."""
