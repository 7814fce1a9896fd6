"""pytest configuration: the project's tool environment and shared fixtures."""

import os

from nandlab import env

env.setup()

# `nandlab.cli.main` re-executes itself under PYTHONHASHSEED=0 (reproducible netlists) when the variable is
# not 0: called in-process by a test, that would replace pytest with the command (`make test` exports it; a
# bare `pytest` does not). Children started by tests inherit it too.
os.environ["PYTHONHASHSEED"] = "0"
