"""Request records: storage, sums per revision per time bucket, and the metric providers of the
canary analysis.

- ``store``: ``write_records`` (raw rows + the sums of their buckets, in one transaction, batched),
  ``cleanup`` (bounded retention).
- ``figures``: ``DatabaseMetrics`` (the ``MetricsPort`` over the stored records) and ``compare``
  (figures per revision over one window, and per bucket for charts).
- ``prometheus``: ``PrometheusMetrics`` (the ``MetricsPort`` of a real cluster, over Prometheus'
  HTTP query API).

Layers: this package sits under the runtime and the simulated cluster (both write or read
records) and over the models and the pure core (``controller.core.latency`` does the arithmetic).
"""
