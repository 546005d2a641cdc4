"""`serve` that never creates its socket: the worker must kill it and start it again."""
import time

time.sleep(3600)
