"""Facts about the machine and the software a result was measured with."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.harness import find_tool

__all__ = ["machine_facts"]

# CPU features that the BLAKE3 implementation dispatches on at run time (its portable,
# SSE2, SSE4.1, AVX2 and AVX-512 back ends), and SHA-NI, which OpenSSL's SHA-256 uses.
_SIMD_FLAGS = ("sse2", "sse4_1", "avx2", "avx512f", "avx512vl", "sha_ni")
_PACKAGES = ("agc", "blake3", "orjson", "rfc8785", "zstandard", "typer", "rich")


def _cpu_info() -> dict[str, Any]:
    model = platform.processor() or "unknown"
    flags: set[str] = set()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model in {"unknown", "", platform.machine()}:
            model = value.strip()
        if key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {
        "model": model,
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "simd_flags": [flag for flag in _SIMD_FLAGS if flag in flags],
    }


def _blake3_backend(simd: list[str]) -> str:
    # The blake3 Python package does not say which back end it picked; it picks the
    # widest the CPU has (AVX-512 needs avx512f and avx512vl), so report that choice.
    if "avx512f" in simd and "avx512vl" in simd:
        return "avx512 (inferred from CPU flags; the blake3 package does not report it)"
    for flag, name in (("avx2", "avx2"), ("sse4_1", "sse41"), ("sse2", "sse2")):
        if flag in simd:
            return f"{name} (inferred from CPU flags; the blake3 package does not report it)"
    return "portable (inferred)"


def _tool_version(name: str) -> str | None:
    path = find_tool(name)
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, check=False, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    first = (done.stdout or done.stderr).strip().splitlines()
    return first[0] if first else "unknown"


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine_facts() -> dict[str, Any]:
    """CPU, cores, SIMD flags, OS, Python, package and tool versions, UTC date."""
    cpu = _cpu_info()
    cpu["blake3_backend"] = _blake3_backend(cpu["simd_flags"])
    return {
        "date_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu": cpu,
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": _package_versions(),
        "tools": {name: _tool_version(name) for name in ("b3sum", "sha256sum", "cat")},
    }
