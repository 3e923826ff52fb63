"""The batch layer of the harness (see tests/test_layers.py)."""
