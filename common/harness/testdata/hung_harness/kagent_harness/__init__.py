"""A kagent_harness whose server never becomes ready (for the start-timeout test)."""
