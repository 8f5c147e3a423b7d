"""S3 object-storage endpoints (MinIO, Ceph RGW, any S3 API): a canary probe per endpoint."""
