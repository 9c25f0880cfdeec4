"""Kopf admission webhooks and watchers around the workloads + policy decision."""
