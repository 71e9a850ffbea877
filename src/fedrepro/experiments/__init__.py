"""Run tables, run execution and scale studies."""

# The scales every paper defines, smallest first (config.schema.yaml `scale` lists the same).
SCALES = ("smoke", "quick", "paper")
