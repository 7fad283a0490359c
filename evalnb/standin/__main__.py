"""``python -m evalnb.standin [--host] [--port] [--seed] [--faults JSON]``."""

from __future__ import annotations

import sys

from evalnb.standin._launch import main

if __name__ == "__main__":
    sys.exit(main())
