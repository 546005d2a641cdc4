import sys

from kagent_harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
