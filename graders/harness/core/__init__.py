"""The core layer of the harness (see tests/test_layers.py)."""
