"""Explain stage: where a job lands and why it pends, in Kueue's, Volcano's, kube-scheduler's
and the policy's terms (`hetgitops explain`; what each team gets overall is `capacity/`'s).

Takes a `Policy` and a workload (a request from options, a WorkloadProfile's job templates, or a
manifest a user submits: Job, JobSet, PyTorchJob, Volcano Job, LeaderWorkerSet, Deployment,
Pod) and gives an `Explanation`: the flavors Kueue tries in order with each one's outcome, the
flavor it assigns (pool, nodes, topology domain) or the reason token and message it would
write, Volcano's and kube-scheduler's view, and the policy line to change. All arithmetic is
plan/'s (`quota_plan.Reach`, `capacity`, `routing`); this stage only replays Kueue's order.
"""
