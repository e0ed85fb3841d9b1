"""``python -m fabricdoc``: the same as the ``fabricdoc`` command."""

import sys

from fabricdoc.cli.main import main

sys.exit(main())
