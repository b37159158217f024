"""`python -m agent_accounts`: the same as `account-cli`."""

from agent_accounts.cli import main

if __name__ == "__main__":  # importing the module (docs tools, walkers) runs nothing
    main()
