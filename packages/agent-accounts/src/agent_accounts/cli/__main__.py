"""`python -m agent_accounts.cli`: the same as `account-cli`."""

from agent_accounts.cli import main

main()
