"""A fake kagent_harness for the worker's C++ tests: only `serve`, scripted (see __main__)."""
