"""The private foundation under every agc feature.

It imports no feature package (``agc.integrity``, ``agc.resume``, ``agc.ledger`` …) and
holds the only raw filesystem, digest and JSON code: ``fs`` (no-follow opens, bounded
reads, atomic writes, locks), ``digest`` (algorithms and streaming digests),
``sidecar`` (b3sum/sha256sum checksum files), ``checkpoint`` (crash checkpoints),
``jsonl`` (the sealed append-only JSONL writer), ``store`` (layout and run ids),
``redact`` (the one secret detector) and ``record`` (the shared comparison, hash and
repr of frozen records). Nothing here is public API: the features re-export what users
need from their own front doors.
"""
