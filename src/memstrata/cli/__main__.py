"""``python -m memstrata.cli``."""

from memstrata.cli import main

if __name__ == "__main__":  # importing the module (a walk of the package) runs nothing
    main()
