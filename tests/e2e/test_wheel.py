"""The wheel `pip install .` builds: the package with its templates, and prompts/, knowledge_base/ and
kernels_dataset/ inside it (agentkern/data/), where agentkern.config finds them in a non-editable install."""

import shutil
import subprocess
import sys
import zipfile

from support import ROOT

from agentkern import config

DATA_FOLDERS = ("prompts", "knowledge_base", "kernels_dataset")


def test_the_wheel_carries_the_data_folders_inside_the_package(tmp_path):
    src = tmp_path / "src"  # a copy: building in the checkout would leave build/ behind
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("agentkern", *DATA_FOLDERS):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    (src / "kernels_dataset" / "problems" / "__pycache__").mkdir()
    (src / "kernels_dataset" / "problems" / "__pycache__" / "relu.cpython-311.pyc").write_bytes(b"stale")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path, src],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [wheel] = tmp_path.glob("agentkern-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    inside = config.PACKAGED_DATA.relative_to(config.PACKAGE.parent).as_posix()  # agentkern/data
    for folder in DATA_FOLDERS:
        files = [p.relative_to(src).as_posix() for p in (src / folder).rglob("*") if p.is_file()]
        shipped = [f for f in files if not f.endswith(".pyc")]
        assert shipped and {f"{inside}/{f}" for f in shipped} <= names, folder
    assert not [n for n in names if n.endswith(".pyc")]  # bytecode left in the tree is not shipped
    package = [p.relative_to(src).as_posix() for p in (src / "agentkern").rglob("*") if p.is_file()]
    assert "agentkern/traces/templates/report.html.j2" in package and "agentkern/cli.py" in package
    assert set(package) <= names  # the code, and every data file beside it
