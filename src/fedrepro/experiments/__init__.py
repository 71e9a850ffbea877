"""Run tables, run execution and scale studies."""

# The scales every paper defines, smallest first (config.schema.yaml `scale` lists the same).
SCALES = ("smoke", "quick", "paper")
# The devices a run may ask for (config `device`, `fedrepro run --device`): engines/context.py resolve_device
# turns auto into cuda where torch finds one, else cpu. Here, not there, so that the command line stays light.
DEVICES = ("auto", "cpu", "cuda")
