"""The sandbox: a zygote that forks workers, the worker loop, and the wire format between them.

`wire`, `worker`, `zygote` and `isolation` run inside the untrusted side and import only the standard
library, numpy and torch (and `pyseccomp`, libseccomp's bindings, for the system-call filter). `client`
is the trusted side's handle on a worker.
"""
