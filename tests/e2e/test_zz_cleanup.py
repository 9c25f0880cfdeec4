"""Deletes what the e2e tests created (kept separate so it runs last)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e


def test_cleanup_objects(kube, namespace):
    from kubernetes import client

    api = client.AppsV1Api(kube)
    for d in api.list_namespaced_deployment(namespace).items:
        api.delete_namespaced_deployment(d.metadata.name, namespace)
    assert api.list_namespaced_deployment(namespace).items == []
