"""``python -m gateway`` runs the ``science-memory`` command line."""

import sys

from gateway.cli.main import main

sys.exit(main())
