"""Scaffold stage: the repository glue around a new policy (hooks, CI, editor settings)."""

from __future__ import annotations

import json

from hetgitops import __version__
from hetgitops.model.schema import raw_schemas
from hetgitops.scaffold.fleet import SCHEMA_DIR

# Where the composite GitHub Action lives: the hetgitops source repository, pinned to the
# release that wrote the scaffold, so CI runs the same rules as the `hetgitops` that made it.
ACTION_REPO = "hetgitops/hetgitops"
POLICY_DIR = "policies"
RENDER_DIR = "rendered"

PRE_COMMIT = f"""\
# pre-commit hooks (https://pre-commit.com): `pre-commit install` once, then every commit
# validates the policy and checks that {RENDER_DIR}/ is the render of it.
# These hooks run the `hetgitops` on your PATH. To let pre-commit install a pinned copy
# instead, use `repo: https://github.com/{ACTION_REPO}` with `rev: v{__version__}` and the same
# hook ids (they are published in .pre-commit-hooks.yaml).
repos:
  - repo: local
    hooks:
      - id: hetgitops-validate
        name: hetgitops validate
        entry: hetgitops validate {POLICY_DIR}
        language: system
        files: ^{POLICY_DIR}/
        pass_filenames: false
      - id: hetgitops-render-check
        name: hetgitops render --check
        entry: hetgitops render {POLICY_DIR} --output {RENDER_DIR} --check
        language: system
        files: ^({POLICY_DIR}|{RENDER_DIR})/
        pass_filenames: false
"""

WORKFLOW = f"""\
# Validate the policy on every pull request: annotations on the changed lines, SARIF for code
# scanning, a check that {RENDER_DIR}/ was re-rendered, and one PR comment with the diff.
name: hetgitops
on:
  pull_request:
  push:
    branches: [main]
permissions:
  contents: read
  pull-requests: write
  security-events: write
jobs:
  policy:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - uses: {ACTION_REPO}@v{__version__}
        with:
          policy: {POLICY_DIR}
          rendered: {RENDER_DIR}
"""

EDITORCONFIG = """\
root = true

[*]
charset = utf-8
end_of_line = lf
insert_final_newline = true
trim_trailing_whitespace = true

[*.{yaml,yml}]
indent_style = space
indent_size = 2
"""

GITIGNORE = """\
.venv/
__pycache__/
"""

README = f"""\
# GPU fleet policy

The policy of this cluster, managed with [hetgitops](https://github.com/{ACTION_REPO}).

- `{POLICY_DIR}/`: the policy (card types, pools, teams, priority tiers). Edit these files.
- `{RENDER_DIR}/`: what `hetgitops render` makes of it; never edit by hand.

After changing the policy:

```sh
hetgitops validate {POLICY_DIR}
hetgitops render {POLICY_DIR} --output {RENDER_DIR}
```

`pre-commit install` runs both checks on every commit; CI runs them on every pull request.
`{SCHEMA_DIR}/` holds the JSON Schemas your editor uses for completion.
"""


def repo_files() -> dict[str, str]:
    """Repository-level files, relative path -> text."""
    files = {
        ".pre-commit-config.yaml": PRE_COMMIT,
        ".github/workflows/hetgitops.yml": WORKFLOW,
        ".editorconfig": EDITORCONFIG,
        ".gitignore": GITIGNORE,
        "README.md": README,
    }
    for name, body in raw_schemas().items():
        files[f"{SCHEMA_DIR}/{name}"] = json.dumps(body, indent=2) + "\n"
    return files
