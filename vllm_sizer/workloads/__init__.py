"""Read vLLM workloads out of Kubernetes objects: one typed Workload per vLLM container."""
