"""Adopt stage (`hetgitops import`): a policy from what a cluster already runs.

Takes Kubernetes objects, read from manifests (`sources`, e.g. a `kubectl get -o yaml` dump or
a GitOps repository) or from a live cluster through `hetgitops.live` (one LIST per kind,
read-only); gives the files of a policy directory laid out like `init`'s (`infer` builds the
documents, `write` lays them out with comments) and the findings of the round trip
(`roundtrip`): the imported policy is rendered again and every imported object whose spec the
first sync would change is a located finding. The package is named `adopt` because `import`
is a Python keyword.
"""
