"""The Pages workflow builds the site as the README does, with a Python the README claims, and deploys only main.

Plain file reads: nothing here reaches the network or runs the workflow.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import ROOT

WORKFLOW_PATH = ROOT / ".github" / "workflows" / "pages.yml"
WORKFLOW: dict[Any, Any] = yaml.safe_load(WORKFLOW_PATH.read_text())
README = (ROOT / "README.md").read_text()
README_COMMANDS = [line.split("#")[0].strip()[2:].strip() for line in README.splitlines() if line.startswith("$ ")]


def triggers() -> dict[str, Any]:
    """The `on:` mapping (YAML 1.1 reads the bare key `on` as True)."""
    on = WORKFLOW.get("on", WORKFLOW.get(True))
    assert isinstance(on, dict), f"{WORKFLOW_PATH.name}: `on:` is not a mapping of events: {on!r}"
    return on


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
    return (
        "github.event_name != 'pull_request'" in text and "github.ref == 'refs/heads/main'" in text and "||" not in text
    )


def readme_python_claims(text: str) -> list[tuple[Version, Version | None]]:
    """Every Python range the text claims: "Python 3.11 or newer", "Python 3.11+", "Python 3.11 to 3.12"."""
    claims: list[tuple[Version, Version | None]] = []
    for low, high in re.findall(r"Python (3\.\d+) to (3\.\d+)", text):
        claims.append((Version(low), Version(high)))
    for low in re.findall(r"Python (3\.\d+)(?: or newer|\+)", text):
        claims.append((Version(low), None))
    return claims


def within(version: Version, claim: tuple[Version, Version | None]) -> bool:
    low, high = claim
    return low <= version and (high is None or Version(f"{version.major}.{version.minor}") <= high)


def test_the_claim_reader_understands_each_way_the_readme_states_a_python_range() -> None:
    claims = readme_python_claims("with Python 3.11 or newer; Python 3.10+ works; Python 3.10 to 3.12 is tested")
    assert claims == [(Version("3.10"), Version("3.12")), (Version("3.11"), None), (Version("3.10"), None)]
    assert within(Version("3.12"), claims[0]) and not within(Version("3.13"), claims[0])
    assert not within(Version("3.10"), claims[1])


def test_workflow_builds_on_pushes_to_main_and_on_pull_requests() -> None:
    on = triggers()
    assert "main" in on["push"]["branches"], f"push triggers {on['push']}, not main"
    assert "pull_request" in on, "pull requests do not build the site"


def test_workflow_builds_with_the_readme_docs_command() -> None:
    readme_docs = [c for c in README_COMMANDS if c.startswith("nox -s docs")]
    assert readme_docs, "the README shows no `nox -s docs` command"
    runs = [str(s.get("run", "")).strip() for s in steps("build")]
    assert readme_docs[0] in runs, f"the build job runs {runs}, not the README's `{readme_docs[0]}`"


def test_workflow_installs_the_nox_that_ci_uses() -> None:
    ci_pin = re.search(r"nox==[\w.]+", (ROOT / ".ci" / "run").read_text())
    assert ci_pin, ".ci/run pins no nox version"
    installs = [str(s.get("run", "")) for s in steps("build") if "pip install" in str(s.get("run", ""))]
    assert any(ci_pin[0] in run for run in installs), f"the build job installs {installs}, not {ci_pin[0]}"


def test_workflow_python_is_one_the_readme_and_pyproject_claim() -> None:
    python = step_using("build", "actions/setup-python")["with"]["python-version"]
    assert isinstance(python, str), f"python-version {python!r} must be quoted (YAML reads 3.10 as 3.1)"
    version = Version(python)
    requires = re.search(r'^requires-python\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert requires, "pyproject.toml declares no requires-python"
    assert version in SpecifierSet(requires[1]), f"the workflow's Python {python} is outside {requires[1]}"
    claims = readme_python_claims(README)
    assert claims, "the README states no Python version range"
    outside = [c for c in claims if not within(version, c)]
    assert not outside, f"the workflow's Python {python} is outside what the README claims: {outside}"


def test_site_is_built_into_the_folder_the_workflow_uploads() -> None:
    build_dir = re.search(r'^BUILD_DIR = "([^"]+)"', (ROOT / "noxfile.py").read_text(), re.M)
    assert build_dir, "noxfile.py has no BUILD_DIR"
    uploaded = step_using("build", "actions/upload-pages-artifact")["with"]["path"]
    assert uploaded.strip("./") == build_dir[1], f"the workflow uploads {uploaded}, the site is built in {build_dir[1]}"


def test_base_url_comes_from_configure_pages_with_a_trailing_slash() -> None:
    pages_id = step_using("build", "actions/configure-pages")["id"]
    env_var = re.search(r'os\.environ\.get\("(\w+)"', (ROOT / "conf.py").read_text())
    assert env_var, "conf.py reads html_baseurl from no environment variable"
    docs_step = next(s for s in steps("build") if str(s.get("run", "")).startswith("nox -s docs"))
    value = docs_step.get("env", {}).get(env_var[1], "")
    assert f"steps.{pages_id}.outputs.base_url" in value, f"{env_var[1]} is {value!r}, not configure-pages' base_url"
    assert "'{0}/'" in value, f"{env_var[1]} = {value!r} does not add the trailing slash html_baseurl needs"


def test_only_main_is_uploaded_and_deployed_with_the_official_pages_actions() -> None:
    for action in ("actions/configure-pages", "actions/upload-pages-artifact"):
        assert only_main(step_using("build", action).get("if")), f"{action} does not run on main only"
    deploy = WORKFLOW["jobs"]["deploy"]
    assert only_main(deploy.get("if")), f"deploy runs when {deploy.get('if')!r}, not on main only"
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    step_using("deploy", "actions/deploy-pages")


def test_no_job_needs_a_gpu_runner() -> None:
    runners = {name: job["runs-on"] for name, job in WORKFLOW["jobs"].items()}
    assert all(r == "ubuntu-latest" for r in runners.values()), f"jobs run on {runners}, not GitHub's CPU runners"


@pytest.mark.parametrize(
    "words",
    ["https://<owner>.github.io/<repo>/", "Settings -> Pages -> Source: GitHub Actions", ".github/workflows/pages.yml"],
)
def test_readme_says_where_the_site_is_published_and_how_a_fork_turns_it_on(words: str) -> None:
    assert words in README, f"the README does not say {words!r}"
