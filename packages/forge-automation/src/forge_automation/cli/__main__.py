"""`python -m forge_automation.cli`: forge-cli."""

from forge_automation.cli import script

if __name__ == "__main__":
    script()
