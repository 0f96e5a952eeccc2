"""The built-in policy: recognises the problem, renders parametrised templates and searches their parameters.

No network, no model: the default when no --model is given. It writes C++/OpenMP for the CPU and Triton for
GPUs, from kernels_dataset/templates/<family>/<backend>.py.j2.

- policy: BuiltinPolicy, the planner and coder that search a family's parameters, stage by stage.
- analysis: parent side; runs recognize in the sandbox and returns an OpSpec.
- recognize, ir, patterns: worker side (torch); what the problem's Model computes, as a template family.
- templates: renders a whole solution file from a family's template and one parameter set.
"""
