"""Test control plane: kube-apiserver + etcd with the upstream CRDs installed (see harness)."""
