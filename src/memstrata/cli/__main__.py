"""``python -m memstrata.cli``."""

from memstrata.cli import main

main()
