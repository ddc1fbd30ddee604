"""Plan stage: the derived facts that checks and compilers share, computed once per Policy.

Takes a Policy. Gives what each pool offers per extended resource (`capacity`), what each team's
queue holds and can ever reach per pool (`quota_plan`), what each Volcano leaf Queue holds
(`volcano_quota`), which labels each node carries and which pool a set of labels selects
(`node_labels`), what each pool's ResourceFlavor is called (`flavors`), and where each workload
profile can run (`routing`). Checks and compilers both read these so that a quota means the
same in a finding, a ClusterQueue, a Volcano Queue and a ResourceQuota.
"""
