"""Where the external test corpora are, and what a test does when one is missing.

The corpora (SQLite's sqllogictest, pg_ivm's regression suite, ...) are not part of the
repository: they are expected in ``../shared/corpora`` beside it, or where an environment
variable of each suite says. Locally a test that needs a missing corpus is skipped; with
``SPARKMV_REQUIRE_CORPORA=1`` (CI sets it, in .ci/run) it fails, because a skipped test in
CI would pass a run that checked nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPORA = REPO.parent / "shared" / "corpora"
REQUIRE_CORPORA_ENV = "SPARKMV_REQUIRE_CORPORA"


def corpus_path(env: str, default: Path) -> Path:
    """The corpus directory: ``$env`` when set, else ``default`` (under SHARED_CORPORA)."""
    return Path(os.environ.get(env, default))


def require_corpus(found: Path, name: str, env: str) -> Path:
    """``found`` if it is a directory; otherwise skip the test (locally) or fail it (with
    ``SPARKMV_REQUIRE_CORPORA=1``), saying where the ``name`` corpus was looked for."""
    if found.is_dir():
        return found
    missing = (
        f"no {name} corpus at {found} (the shared corpora are expected in "
        f"../shared/corpora beside the repository, or set {env})"
    )
    if os.environ.get(REQUIRE_CORPORA_ENV) == "1":
        pytest.fail(f"{missing}; {REQUIRE_CORPORA_ENV}=1 requires it", pytrace=False)
    pytest.skip(missing)
