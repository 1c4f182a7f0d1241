"""Helpers shared by the tests (tests/README.md): importable as `support.<module>` because
pyproject.toml puts tests/ on the path (pytest `pythonpath`); bench/ scripts that reuse them put
tests/ on sys.path themselves. Session fixtures live in modules registered by tests/conftest.py
(pytest_plugins), so every test can ask for them by name without importing anything."""
