"""The Pages workflow parses, builds the site with a nox session that exists into the folder it uploads, for the
address Pages gives it, with a Python the project accepts, and deploys from main only (never a pull request).

Plain file reads: nothing here reaches the network or runs the workflow.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW: dict[Any, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
NOXFILE = (ROOT / "noxfile.py").read_text()


def steps(job: str) -> list[dict[str, Any]]:
    return WORKFLOW["jobs"][job]["steps"]


def step_using(job: str, action: str) -> dict[str, Any]:
    """The one step of a job that uses an action (owner/name, any version)."""
    found = [s for s in steps(job) if str(s.get("uses", "")).split("@")[0] == action]
    assert len(found) == 1, f"job {job!r} uses {action} {len(found)} times, expected once"
    return found[0]


def only_main(condition: object) -> bool:
    """Whether an `if:` holds on main and never on a pull request (which must not touch Pages)."""
    text = str(condition or "")
    main = "github.event_name != 'pull_request'" in text and "github.ref == 'refs/heads/main'" in text
    return main and "||" not in text


def test_pushes_to_main_and_pull_requests_build_the_site_with_a_nox_session_that_exists() -> None:
    on = WORKFLOW.get("on", WORKFLOW.get(True))  # YAML 1.1 reads the bare key `on` as True
    assert "main" in on["push"]["branches"] and "pull_request" in on, on
    sessions = set(re.findall(r"@nox\.session(?:\([^)]*\))?\s*\ndef (\w+)\(", NOXFILE))
    runs = [str(s["run"]) for s in steps("build") if re.match(r"nox -s ", str(s.get("run", "")))]
    assert runs, "the build job runs no nox session"
    for run in runs:
        assert run.split()[2] in sessions, f"the build job runs `{run}`; noxfile.py has {sorted(sessions)}"


def test_the_site_is_uploaded_from_the_folder_nox_builds_it_into() -> None:
    build_dir = re.search(r'^BUILD_DIR = "([^"]+)"', NOXFILE, re.M)
    assert build_dir, "noxfile.py has no BUILD_DIR"
    uploaded = step_using("build", "actions/upload-pages-artifact")["with"]["path"]
    assert uploaded.strip("./") == build_dir[1], f"the workflow uploads {uploaded}, the site is built in {build_dir[1]}"


def test_the_build_gets_pages_address_with_a_trailing_slash() -> None:
    pages_id = step_using("build", "actions/configure-pages")["id"]
    env_var = re.search(r'os\.environ\.get\("(\w+)"', (ROOT / "conf.py").read_text())
    assert env_var, "conf.py reads html_baseurl from no environment variable"
    docs_step = next(s for s in steps("build") if str(s.get("run", "")).startswith("nox -s docs"))
    value = docs_step.get("env", {}).get(env_var[1], "")
    assert f"steps.{pages_id}.outputs.base_url" in value, f"{env_var[1]} is {value!r}, not configure-pages' base_url"
    assert "'{0}/'" in value, f"{env_var[1]} = {value!r} does not add the trailing slash html_baseurl needs"


def test_the_python_is_quoted_and_one_pyproject_accepts() -> None:
    python = step_using("build", "actions/setup-python")["with"]["python-version"]
    assert isinstance(python, str), f"python-version {python!r} must be quoted (YAML reads 3.10 as 3.1)"
    requires = re.search(r'^requires-python\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert requires and Version(python) in SpecifierSet(requires[1]), f"Python {python} is outside {requires}"


def test_only_main_is_uploaded_and_deployed() -> None:
    for action in ("actions/configure-pages", "actions/upload-pages-artifact"):
        assert only_main(step_using("build", action).get("if")), f"{action} does not run on main only"
    deploy = WORKFLOW["jobs"]["deploy"]
    assert only_main(deploy.get("if")), f"deploy runs when {deploy.get('if')!r}, not on main only"
    assert deploy["needs"] == "build"
    step_using("deploy", "actions/deploy-pages")
