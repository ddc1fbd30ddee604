"""Load stage: policy paths -> identified policy Documents with positions, or located diagnostics.

Takes file and directory paths (or in-memory sources). Finds the policy files, reads each once,
parses YAML with libyaml events into plain data plus a SourceMap (line:col for every key and
value) within hard limits (size, depth, aliases), and splits the files into documents keyed by
kind and name. Gives `LoadResult` (documents + diagnostics). Also reads policy files at a Git
ref straight from Git objects (`git_source`, `git_tree`) and the lines changed since a ref
(`changed`), for `diff` and `validate --changed-since` alike. Imports nothing but `diagnostics`.
"""

# Importing any load module registers the stage's rule ids (documents.LOAD_RULES) first.
from hetgitops.load import documents as _documents  # noqa: F401
