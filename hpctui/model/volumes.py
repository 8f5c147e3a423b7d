"""Kubernetes storage as GPU pods need it: PersistentVolumeClaims and the StorageClasses (CSI drivers) that
provision them — what ties a pending claim or a failed mount to its driver (issue #27 §5)."""

from __future__ import annotations

import msgspec


class VolumeClaim(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A core/v1 PersistentVolumeClaim."""

    namespace: str
    name: str
    phase: str = "Pending"  # Pending, Bound, Lost
    storage_class: str | None = None  # spec.storageClassName (the default class is filled in at creation)
    volume: str | None = None  # spec.volumeName once bound ("pvc-<uid>" for a provisioned one)
    requested: str | None = None  # spec.resources.requests.storage, as written ("5Gi")
    created: float | None = None
    uid: str | None = None


class StorageClassInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A storage.k8s.io/v1 StorageClass: which provisioner (a CSI driver's name) makes its volumes."""

    name: str
    provisioner: str
    default: bool = False  # annotation storageclass.kubernetes.io/is-default-class = "true"
    binding_mode: str | None = None  # Immediate / WaitForFirstConsumer


class Volumes(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The claims and storage classes one source lists."""

    claims: tuple[VolumeClaim, ...] = ()
    classes: tuple[StorageClassInfo, ...] = ()


def merge_volumes(parts: list[Volumes]) -> Volumes:
    """Several sources' volumes as one (the first source's class of a name wins)."""
    if len(parts) == 1:
        return parts[0]
    classes: dict[str, StorageClassInfo] = {}
    for p in parts:
        for c in p.classes:
            classes.setdefault(c.name, c)
    return Volumes(claims=tuple(c for p in parts for c in p.claims), classes=tuple(classes.values()))
