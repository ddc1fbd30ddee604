"""Output stage: Manifest (a rendered object + the policy origin), deterministic YAML, trees.

Takes the compilers' Manifests. Gives the byte-stable YAML stream, one-file-per-object trees with
a kustomization.yaml written atomically, and `--check` comparison of a committed tree. The
`Manifest` type lives here because every compiler produces it and every later stage reads it.
"""
