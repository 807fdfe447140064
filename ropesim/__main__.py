"""``python -m ropesim``: the same as the ``ropesim`` command."""

from ropesim.app.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
