import sys

from mpibench.cli import main

sys.exit(main())
