"""Conformance stage: rendered Manifests against what the target API servers will accept.

Takes Manifests and the Policy. Checks every object against the Kubernetes schemas, the project's
target schemas and CRDs (`--crd-dir`), and Kueue's CEL and webhook rules re-implemented in Python.
Gives diagnostics located at the policy line that produced the object.
"""
