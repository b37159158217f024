"""`python -m local_daemon`: the local-daemon command line."""

from local_daemon.cli import main

if __name__ == "__main__":
    main()
