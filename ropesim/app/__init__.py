"""The programs: the moderngl-window viewer, its panel and the ``ropesim`` command line."""
