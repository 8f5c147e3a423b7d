"""Ceph: cluster health through the ``ceph`` CLI (status, health detail, osd tree, df)."""
