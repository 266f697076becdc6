"""`python -m ebm_platform.cli`: the same as `ebm`."""

import sys

from ebm_platform.cli import main

sys.exit(main())
