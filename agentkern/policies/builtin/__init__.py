"""The built-in policy: recognises the problem, renders parametrised templates and searches their parameters.

No network, no model: the default when no --model is given."""
