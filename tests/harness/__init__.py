"""Test support: the real systems the tests run against, built and started from pinned sources.

- `controlplane`: a real kube-apiserver and etcd built from the pinned Kubernetes module
  (`scripts/controlplane`), for the e2e slice;
- `simcluster`: the simulated fleet: kwok nodes with the real kube-scheduler, Kueue, Volcano, NFD,
  Flux, Argo CD, Koordinator and the KubeRay operator, built from the Go module proxy at pinned
  versions (`scripts/simcluster`, `scripts/gobuilds`), for the sim slice;
- `upstream`: upstream CRDs and examples read from those same pinned modules, so no test depends
  on `../shared`.

Nothing here is imported by the hetgitops package; tests import it as `harness.<part>` (pytest
puts tests/ on the path; the scripts do the same). The Go modules under `controlplane/` and
`simcluster/go/` keep the module paths and go.mod comments they had before they moved here
(`hetgitops/tests/simcluster/go/...`): their bytes are part of the build cache key, and changing
them would turn every cached build cold once.
"""
