"""nandlab build targets."""
