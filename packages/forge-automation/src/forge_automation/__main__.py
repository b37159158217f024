"""`python -m forge_automation`: forge-cli."""

from forge_automation.cli import main

if __name__ == "__main__":
    main()
