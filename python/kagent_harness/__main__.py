import faulthandler
import signal
import sys

from kagent_harness.cli import main

if __name__ == "__main__":
    # `kill -USR1 PID` prints every thread's stack to stderr: where a stuck harness waits.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    sys.exit(main())
