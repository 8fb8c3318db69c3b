"""Fixture generation proper, run by `scripts/fixtures` inside the tools' virtual environment
(the modules import numpy, ztensor, safetensors and, for the full set, torch)."""
