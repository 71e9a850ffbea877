"""Decoders for the raw file formats of the registered datasets (no validation of
dataset-specific counts here: prepare.py does that)."""
