"""Hardware targets: published GPU figures, this host's CPU figures, and the roofline bound on a kernel's time.

- catalog: the GPUs (NVIDIA's published dense peaks, each with its source URL), names, aliases, lookup;
- host: this machine: the CPU's figures (read from /proc and /sys; bandwidths measured once and cached) and
  the local GPU's name;
- roofline: the least time a kernel can take on a target, what `roofline_fraction` divides by;
- costmodel: predicted times for a GPU that is not here (imported by whoever needs it).

`from agentkern import targets as T; T.get_target("h100")`: the public names are re-exported here.
"""

from agentkern.targets.catalog import (
    GPU_NAMES,
    TARGET_NAMES,
    get_target,
    is_present,
    list_targets,
    measured_on,
    target_summary_rows,
)
from agentkern.targets.host import cpu_cache_bandwidth_gbs, cpu_target, local_gpu_name, remeasure_host
from agentkern.targets.roofline import ROOFLINE_MARGIN, beyond_roofline, peak_tflops, roofline_ms

__all__ = [
    "GPU_NAMES",
    "ROOFLINE_MARGIN",
    "TARGET_NAMES",
    "beyond_roofline",
    "cpu_cache_bandwidth_gbs",
    "cpu_target",
    "get_target",
    "is_present",
    "list_targets",
    "local_gpu_name",
    "measured_on",
    "peak_tflops",
    "remeasure_host",
    "roofline_ms",
    "target_summary_rows",
]
