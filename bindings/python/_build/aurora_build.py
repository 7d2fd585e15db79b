"""A PEP 517 build backend for the aurora_mcp package, standard library only.

The package is pure Python (it loads libaurora-mcp with ctypes), so a
wheel is the package directory, its metadata and a RECORD: nothing to
compile.  Written here rather than taken from setuptools or flit so that
installing needs no package index (Debian's pip would otherwise fetch
the backend from PyPI into an isolated build environment).
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "aurora_mcp"
DIST = "aurora-mcp"
VERSION = "1.0.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METADATA = (
    "Metadata-Version: 2.1\n"
    f"Name: {DIST}\n"
    f"Version: {VERSION}\n"
    "Summary: Python binding of libaurora-mcp, the aurora MCP client host\n"
    "Requires-Python: >=3.9\n"
)
WHEEL = (
    "Wheel-Version: 1.0\n"
    "Generator: aurora_build\n"
    "Root-Is-Purelib: true\n"
    "Tag: py3-none-any\n"
)


def _package_files():
    """(path in the archive, bytes) of every file of the package."""
    top = os.path.join(ROOT, NAME)
    for name in sorted(os.listdir(top)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(top, name), "rb") as f:
                yield f"{NAME}/{name}", f.read()


def _digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    info = f"{NAME}-{VERSION}.dist-info"
    files = list(_package_files())
    files += [(f"{info}/METADATA", METADATA.encode()),
              (f"{info}/WHEEL", WHEEL.encode())]
    record = "".join(f"{p},{_digest(d)},{len(d)}\n" for p, d in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "_build/aurora_build.py"]:
            t.add(os.path.join(ROOT, rel), f"{base}/{rel}")
        for path, data in _package_files():
            ti = tarfile.TarInfo(f"{base}/{path}")
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        pkg = METADATA.encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        t.addfile(ti, io.BytesIO(pkg))
    return name
