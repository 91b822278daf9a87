"""``python -m olb.grid``: see olb/grid/cli.py and docs/grid.md."""

from olb.grid.cli import main

if __name__ == "__main__":
    main()
