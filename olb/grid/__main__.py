"""``python -m olb.grid``: see olb/grid/app.py and docs/grid.md."""

from olb.grid.app import main

if __name__ == "__main__":
    main()
