"""Generated test inputs: seeded generators of policies and clusters (clustergen.py), shaped
as their authors write them, for the sweeps that run hetgitops over them."""
