"""`python -m cli` runs the dockyard command."""
from cli.main import main

if __name__ == "__main__":
    main()
