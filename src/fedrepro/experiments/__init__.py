"""Run tables, run execution and the run store."""
