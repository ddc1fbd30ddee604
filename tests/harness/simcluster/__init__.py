"""Simulated cluster for the sim tests: kube-scheduler, kube-controller-manager, kwok, NFD and
Kueue around the test control plane (see docs/simcluster.md)."""
