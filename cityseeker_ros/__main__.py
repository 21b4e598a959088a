"""`python -m cityseeker_ros` is the `cityseeker` command."""
import sys

from cityseeker_ros.cli import main

sys.exit(main())
