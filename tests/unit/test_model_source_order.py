"""The reference's source that the built-in kernels embed is the same text in every process: it keys the build
cache (agentkern/harness/build_cache.py), so a size's constants re-assigned in a set's order (Python's string
hashing differs per process) made the same kernel a new build."""

import os
import subprocess
import sys
import textwrap

PROBLEM = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(in_features, out_features)  # the Model reads the size constants itself

        def forward(self, x):
            return self.linear(x)[:, : width + depth]


    in_features = 64
    out_features = 64
    width = 8
    depth = 8
    """
)


def _source(path, seed):
    code = (
        "import sys; from agentkern.policies.builtin.recognize import model_source; "
        "sys.stdout.write(model_source(sys.argv[1], overrides={'in_features': 32, 'out_features': 32, "
        "'width': 4, 'depth': 4}))"
    )
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    return subprocess.run(
        [sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True, check=True
    ).stdout


def test_a_sized_reference_source_is_the_same_text_in_every_process(tmp_path):
    path = tmp_path / "problem.py"
    path.write_text(PROBLEM)
    sources = {_source(path, seed) for seed in (1, 2, 3, 4)}
    assert len(sources) == 1
    (source,) = sources
    assert "in_features = 32" in source and "depth = 4" in source
