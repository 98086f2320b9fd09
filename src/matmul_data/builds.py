"""The sm_90a build record (``plots/results/builds/sm_90a.json``, written by the benchmark's build check) as typed
objects: what ptxas, the launch and the SASS say of each version's build and of the extra builds a chapter quotes.

``BuildRecord.from_json(data)`` decodes the file's dict (every key known, each of its kind); ``to_json()`` gives it
back key for key, so that the file written with ``json.dumps(..., indent=2, sort_keys=True)`` round-trips byte for byte.
"""

from __future__ import annotations

import dataclasses

from matmul_data.decoding import COUNT, COUNT0, TEXT, Config, Model, key


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildFacts(Model):
    """One sm_90a build: ptxas's resources, the launch, the advisories, static SASS counts, ptxas's and PTX's text."""

    advisories: dict[str, int] = key()  # ptxas advisory code -> how often ptxas gave it
    barriers: int = key(COUNT0)  # named barriers (ptxas)
    config: Config | None = key(absent=True)  # extras only: the configuration built
    depbar: dict[str, int] = key()  # WARPGROUP.DEPBAR's groups left pending -> how many of them
    files: tuple[str, ...] | None = key(absent=True)  # extras only: the files built, relative to the repository
    hgmma: dict[str, int] = key()  # HGMMA shape -> count
    of: str | None = key(TEXT, absent=True)  # extras only: the version it is built beside
    persistent_blocks: int | None = key(COUNT, null=True)  # blocks launched when the grid is fixed, else null
    ptx: dict[str, str] = key()  # PTX instruction -> its first line in the PTX
    ptxas: str = key(TEXT)  # ptxas's report
    registers: int = key(COUNT)  # per thread
    sass: dict[str, int] = key()  # SASS family (budget.SASS_FAMILIES) -> static count
    shared_bytes: int = key(COUNT0)  # dynamic shared memory per block
    source: str = key(TEXT)  # budget.files_hash of the files it was built from
    spill_loads: int = key(COUNT0)
    spill_stores: int = key(COUNT0)
    stack_bytes: int = key(COUNT0)
    threads: int = key(COUNT)
    what: str | None = key(TEXT, absent=True)  # extras only: what the build is, in words


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildRecord(Model):
    """The whole build record: the tools, the shape built at, and each version's and extra's build."""

    arch: str = key(TEXT)
    cuobjdump: str = key(TEXT)  # its --version's last line
    extras: dict[str, BuildFacts] = key()  # name -> a build beside the versions that a chapter quotes
    nvcc: str = key(TEXT)  # its --version's last line
    shape: tuple[int, int, int] = key()
    tilus: str = key(TEXT)
    versions: dict[str, BuildFacts] = key()

    @property
    def builds(self) -> dict[str, BuildFacts]:
        """Every build by name: the versions', then the extras'."""
        return {**self.versions, **self.extras}
