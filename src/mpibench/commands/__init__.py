"""One module per CLI verb; each defines register(subparsers) and sets func on its parser."""
