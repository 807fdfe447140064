"""The programs: the ``ropesim`` command line (cli, headless commands, compare) and the
viewer (hotkeys, window-free controller and its helpers, window, panel, imgui backend)."""
