"""Harness modes besides judging a candidate: hardware counters, the torch.compile baseline, PTX checks."""
