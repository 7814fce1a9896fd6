"""pytest configuration: the project's tool environment and shared fixtures."""

from nandlab import env

env.setup()
