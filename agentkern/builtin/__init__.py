"""The built-in (no-LLM) policy's raw material: recognise what a problem computes, render C++ kernels.

- `analysis.analyze_problem(path)`: parent side; runs `recognize.analyze` in the sandbox, returns an OpSpec.
- `recognize.analyze(path)`: worker side (imports torch); traces the problem's Model into an OpSpec.
- `templates.render(spec, params)`: a whole solution file from kernels_dataset/templates/<family>/cpp.py.j2.

Nothing here imports torch at module level: the CLI process stays light.
"""
