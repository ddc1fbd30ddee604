"""Generated test inputs: seeded generators of policies (policygen.py) and of clusters as
platform teams write them (clustergen.py), for the sweeps that run hetgitops over them
(docs/testing.md, docs/adopt.md)."""
