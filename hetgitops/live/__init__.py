"""Live stage: the one read-only path into a cluster, shared by `drift`, `import`,
`explain` and `diff --kubeconfig`.

Takes a kubeconfig (and context); gives raw JSON objects from paginated LISTs, one server-side
apply dry-run, and three plain exception types for what can go wrong (`ClusterError`,
`Forbidden`, `NotServed`, plus `RequestFailed` for any other refusal). `client` is the only
importer of the `kubernetes` package in hetgitops; everything above it works on plain JSON.
`resources` names where each kind read lives in the API; `workloads` is the one reader of what a
live Workload or Pod says (holds quota, waiting, finished, requested), Kueue's own definitions.
`shape` checks every LIST item before any reader sees it, `said` is the only way server text
reaches a message (credentials hidden, control characters escaped), `plugin` runs exec
credential plugins bounded. Imports nothing from hetgitops but `diagnostics` (the escape the
text report uses), so any stage may read the cluster through it.
"""
