# Installs the test tiers' guard in Python children of the test suite (see tierguard.py).
import os

if os.environ.get("MPIBENCH_TIER_GUARD"):
    import tierguard

    tierguard.install()
