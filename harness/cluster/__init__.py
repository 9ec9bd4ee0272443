"""Cluster plumbing: the environments' processes, binaries, certificates, kubeconfigs and
Kueue's installation."""
