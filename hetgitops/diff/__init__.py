"""Diff stage: two policy trees (Git refs, folders) -> what the change does.

Takes the files of a base and a head side (read straight from Git objects or from folders),
runs each through the same pipeline as `render` (load, model, checks, compilers, output checks)
and gives a `DiffResult`: the policy impact (quota, reach, capacity, cost, tiers, lifecycle,
MIG drain plan, day-2 hazards, findings introduced and resolved) and the object-level changes
per target, which the formatters in `diff.formats` print as text, Markdown, JSON or GitHub
annotations. Hazards are judged from the two sides' manifests, not from compiler internals.
"""
