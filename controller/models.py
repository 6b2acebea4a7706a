"""Database rows of the simulated cluster used by the live app (``controller.simcluster.database``).

The live app's simulated cluster keeps ALL of its state here, so restarting every process (web,
worker, beat) loses nothing: the objects, the nodes, the clock and each pod's kubelet deadlines
(in the pod's own annotations) come back from the database.

- ``SimObject``: one Kubernetes-shaped object (ModelServing, Pod, ControllerRevision; and for KServe:
  InferenceService, Deployment, ReplicaSet, ConfigMap) as JSON, plus the few columns the store
  queries by. ``resource_version`` is the optimistic-concurrency token:
  every write is a compare-and-set ``UPDATE ... WHERE id = X AND resource_version = RV``.
- ``SimNode``: a simulated GPU node.
- ``SimClock``: the simulated time (a linear map of wall time, with a speed factor) and the cluster's
  physics configuration (phase timings, per-image behaviour).
- ``SimTraffic``: the request load sent to one ModelServing or InferenceService and its running totals.
- ``ProgressSample``: rollout progress sampled over time for the dashboard's charts.
"""

from __future__ import annotations

import time

from django.db import models


class SimObject(models.Model):
    KIND_MODELSERVING = "ModelServing"
    KIND_POD = "Pod"
    KIND_REVISION = "ControllerRevision"
    # KServe on the simulated cluster (controller.simcluster.kserve.controller and .deployments).
    KIND_INFERENCESERVICE = "InferenceService"
    KIND_DEPLOYMENT = "Deployment"
    KIND_REPLICASET = "ReplicaSet"
    KIND_CONFIGMAP = "ConfigMap"

    kind = models.CharField(max_length=32)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    # The owning ModelServing (the name label of pods and revisions; the name itself for one).
    ms_name = models.CharField(max_length=253, blank=True, db_index=True)
    uid = models.CharField(max_length=64)
    resource_version = models.BigIntegerField()
    generation = models.BigIntegerField(default=0)
    data = models.JSONField()
    # The name of the object's controller (its ownerReference with controller: true) when that is a
    # workload object: a ReplicaSet's pods, a Deployment's ReplicaSets, an InferenceService's
    # Deployments. The simulated controllers list what they own by it.
    controller = models.CharField(max_length=253, blank=True, default="")
    # Pods only: the node it is bound to and the GPUs it holds there (GPU accounting is a SUM over
    # these columns, so the scheduler never loads every pod's JSON).
    node = models.CharField(max_length=253, blank=True, db_index=True)
    gpus = models.IntegerField(default=0)
    # Pods only: simulated time of the kubelet's next step (None: nothing scheduled). The physics
    # tick selects ``next_at <= now`` instead of scanning every pod.
    next_at = models.FloatField(null=True, blank=True, db_index=True)
    # ModelServings only: the compact row the list page shows (kept at write time, so listing 1,000
    # ModelServings never parses their full status).
    summary = models.JSONField(default=dict, blank=True)
    # Who wrote last ("controller", "kubelet", "operator", ...) and when (wall-clock epoch seconds):
    # what the reaction-latency benchmark measures.
    written_by = models.CharField(max_length=32, blank=True)
    written_at = models.FloatField(default=time.time)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "namespace", "name"], name="simobject_kind_ns_name")]
        indexes = [
            models.Index(fields=["kind", "namespace", "ms_name"], name="simobject_owner_idx"),
            models.Index(fields=["kind", "namespace", "controller"], name="simobject_controller_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} rv={self.resource_version}"


class SimNode(models.Model):
    name = models.CharField(max_length=253, unique=True)
    gpus = models.IntegerField()
    ip = models.CharField(max_length=64)
    # A failed node keeps its row (so the dashboard can show it, and names are never reused) but
    # holds no pods and schedules nothing.
    failed = models.BooleanField(default=False)
    created_at = models.FloatField(default=time.time)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.gpus} GPUs{', failed' if self.failed else ''})"


class SimClock(models.Model):
    """The one simulated clock (row id 1): ``sim = sim_base + (wall - wall_base) * speed``.

    Example: wall_base 1000.0, sim_base 1000.0, speed 10: at wall 1003.5 the simulated time is
    1035.0. Changing the speed re-bases at the current moment, so simulated time never jumps.
    """

    wall_base = models.FloatField()
    sim_base = models.FloatField()
    speed = models.FloatField(default=1.0)
    # {"timing": {phase: [low, high]}, "images": {image: {"crash", "load", ...}}}
    config = models.JSONField(default=dict, blank=True)

    def sim_now(self, wall: float | None = None) -> float:
        wall = time.time() if wall is None else wall
        return self.sim_base + (wall - self.wall_base) * self.speed


class SimTraffic(models.Model):
    """Requests sent to one ModelServing's entry pods (or one InferenceService's predictor pods, split
    by its traffic weights): ``rps`` per simulated second, each keeping its pod busy for a duration
    drawn from ``[duration_low, duration_high]`` simulated seconds."""

    KIND_MODELSERVING = "ModelServing"
    KIND_INFERENCESERVICE = "InferenceService"

    kind = models.CharField(max_length=32, default=KIND_MODELSERVING)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    rps = models.FloatField(default=0.0)
    duration_low = models.FloatField(default=2.0)
    duration_high = models.FloatField(default=20.0)
    # Simulated time up to which arrivals were generated.
    generated_until = models.FloatField(null=True, blank=True)
    sent = models.BigIntegerField(default=0)
    completed = models.BigIntegerField(default=0)
    interrupted = models.BigIntegerField(default=0)
    rejected = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "namespace", "name"], name="simtraffic_kind_ns_name")]


class ProgressSample(models.Model):
    """One point of a ModelServing's progress history (see ``controller.tasks.sample_progress``)."""

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    t = models.FloatField()  # clock seconds (simulated time on the sim backend)
    data = models.JSONField()
    created_at = models.FloatField(default=time.time)

    class Meta:
        indexes = [models.Index(fields=["namespace", "name", "t"], name="progress_ms_t_idx")]
        ordering = ["t"]


class RequestRecord(models.Model):
    """One request served by one revision of a ModelServing (``controller.records``): finished, or
    still running (status ``running``, no ``finished``; the canary analysis counts it as evidence
    by its age, and its finished record replaces it).

    From the simulated router (``controller.simcluster.database.traffic``) or ingested through
    ``POST /api/request-records/``. Raw rows are kept for ``ROLLOUTUI_RECORDS_RETENTION_SECONDS``
    (the periodic cleanup deletes older ones); the sums of finished ones live on in
    ``RequestAggregate``. Times are clock seconds (epoch seconds; simulated time on the simulated
    cluster).
    """

    RUNNING = "running"
    STATUSES = ("ok", "error", "timeout", "interrupted", RUNNING)

    request_id = models.CharField(max_length=128)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    revision = models.CharField(max_length=128)  # the controller revision hash
    deployment_revision = models.CharField(max_length=64, blank=True, default="")
    model_version = models.CharField(max_length=253, blank=True, default="")
    latency_ms = models.FloatField(null=True, blank=True)  # time to first answer; None if never answered
    status = models.CharField(max_length=16)
    feedback = models.FloatField(null=True, blank=True)
    started = models.FloatField()
    finished = models.FloatField(null=True, blank=True)  # None while the request runs
    # Token figures and the path through the roles, when the router knows them (None: not said).
    ttft_ms = models.FloatField(null=True, blank=True)  # time to first token
    tpot_ms = models.FloatField(null=True, blank=True)  # time per output token
    input_tokens = models.IntegerField(null=True, blank=True)
    output_tokens = models.IntegerField(null=True, blank=True)
    # The hops, in order: [{"role", "pod", "revision"}]; None when the record says nothing of a path.
    path = models.JSONField(null=True, blank=True)
    mixed = models.BooleanField(null=True, blank=True)  # hops from more than one revision
    path_error = models.CharField(max_length=16, blank=True, default="")  # noRoute, kvMismatch

    class Meta:
        indexes = [
            # The analysis window's edges and the comparison read by ModelServing, revision, start.
            models.Index(fields=["namespace", "name", "revision", "started"], name="reqrec_ms_rev_started_idx"),
            # The retention cleanup deletes by finish time.
            models.Index(fields=["finished"], name="reqrec_finished_idx"),
            # A finished record finds the running record of its request (and the other way round).
            models.Index(fields=["namespace", "name", "request_id"], name="reqrec_ms_request_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}@{self.revision} {self.request_id} {self.status}"


class RequestAggregate(models.Model):
    """Sums of the request records of one revision that started in one time bucket
    ``[bucket_start, bucket_start + RECORD_BUCKET_SECONDS)`` (``controller.records``).

    ``histogram``: ``{"<bucket index>": count}`` of the latencies of answered requests over the fixed
    boundaries of ``controller.core.latency``, so percentiles of any run of buckets are exact to the
    bucket width. ``duration_histogram`` (with ``duration_max``): the same of the finished requests'
    durations (start to end; answered or timed out), whose p99 is the settle time of the next
    canary analysis window. Kept for ``ROLLOUTUI_AGGREGATES_RETENTION_SECONDS`` (longer than raw
    records).
    """

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    revision = models.CharField(max_length=128)
    bucket_start = models.FloatField()
    requests = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0)
    timeouts = models.BigIntegerField(default=0)
    interrupted = models.BigIntegerField(default=0)
    feedback_sum = models.FloatField(default=0.0)
    feedback_count = models.BigIntegerField(default=0)
    latency_max = models.FloatField(null=True, blank=True)
    histogram = models.JSONField(default=dict)
    duration_max = models.FloatField(null=True, blank=True)
    duration_histogram = models.JSONField(default=dict)
    # Token figures and paths of the records that carry them (``controller.core.latency.Sums``):
    # TTFT and TPOT histograms on the same boundaries, mixed requests, output tokens, and
    # ``{"<first hop revision>/<last hop revision>": {"consistent"|"mixed"|"noRoute"|"kvMismatch": n}}``.
    ttft_max = models.FloatField(null=True, blank=True)
    ttft_histogram = models.JSONField(default=dict)
    tpot_max = models.FloatField(null=True, blank=True)
    tpot_histogram = models.JSONField(default=dict)
    mixed = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    paths = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name", "revision", "bucket_start"], name="reqagg_ms_rev_bucket"
            )
        ]
        indexes = [
            models.Index(fields=["namespace", "name", "bucket_start"], name="reqagg_ms_bucket_idx"),
            models.Index(fields=["bucket_start"], name="reqagg_bucket_idx"),
        ]
