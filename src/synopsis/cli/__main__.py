"""``python -m synopsis.cli``: the same command as the installed ``synopsis``."""

import sys

from synopsis.cli import main

sys.exit(main())
