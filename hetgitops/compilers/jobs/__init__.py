"""Job-template compiler: per team x workload profile x card type job manifests from Jinja2.

Takes a Policy and the routing plan. Renders the sandboxed templates of `templates/` (or a
repository's `--templates`) with StrictUndefined into Manifests that are never part of the
applied tree: they are what a team copies to submit work that lands where the policy says.
"""
