"""Which files the wheel holds; everything else about the package is declared in pyproject.toml.

The repository keeps prompts/, knowledge_base/ and kernels_dataset/ at its top level. A wheel ships them
inside the package, as agentkern/data/<name> (package data), so that a non-editable install works from any
folder; agentkern.config.data_root() looks there first, then in the checkout (an editable install).
pyproject.toml's package discovery cannot map a folder outside the package into it, hence this file.
"""

from setuptools import find_packages, setup

DATA_FOLDERS = ("prompts", "knowledge_base", "kernels_dataset")

setup(
    packages=[
        *find_packages(include=["agentkern", "agentkern.*"]),
        *(f"agentkern.data.{name}" for name in DATA_FOLDERS),
    ],
    package_dir={f"agentkern.data.{name}": name for name in DATA_FOLDERS},
    package_data={
        # Data beside the code: the report's and exports' templates (traces/templates/), catalogs, ...
        # and agentkern's own C++ (harness/op_observer.cpp, built by the judge at run time).
        "agentkern": [f"**/*.{ext}" for ext in ("j2", "json", "toml", "yaml", "csv", "md", "txt", "cpp")],
        **{f"agentkern.data.{name}": ["**/*"] for name in DATA_FOLDERS},
    },
    exclude_package_data={"": ["*.pyc"]},  # bytecode a local run left beside the problems and solutions
)
