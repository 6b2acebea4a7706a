"""Request records: sustained ingestion through the API, and one analysis window over a million records.

    python -m bench records [--json] [--batches 20] [--batch-size 2500] [--total 1000000] [--windows 20]

A fresh database (a file SQLite in a temporary directory, or a database of its own on PostgreSQL
when DATABASE_URL points at one; ``tests.live.procs.LiveEnv``), migrated, with a user in the
``ingesters`` group and an API token.

1. **Ingestion**: ``--batches`` batches of ``--batch-size`` records (two revisions of one
   ModelServing, 1 request in 20 an error, latencies 50-2,000 ms, feedback on half of them) are
   POSTed to ``/api/request-records/`` with ``Authorization: Token ...`` through Django's whole
   request path (middleware, token authentication, permission, validation of every record, the
   raw rows and the per-bucket sums in one transaction), back to back, in this process (Django's
   test client: no network hop). Figure: records stored per second of wall time over all batches.
   Target: >= 20,000 records/s (also printed: the same per second of this process's CPU time,
   which a loaded host moves less).
2. **Analysis window**: the database is filled up to ``--total`` records (1,000,000: the same
   records written through ``controller.records.store.write_records``, the API's own storage
   call, in batches of 5,000, over one hour of traffic), then ``DatabaseMetrics.window`` (what the canary analysis asks
   each interval) computes one revision's figures over a 300 s window whose edges fall inside
   10 s buckets, ``--windows`` times. Figure: median and worst time per window. Target: < 100 ms.
   The sums per revision per bucket are what make this independent of the record count: 30 rows
   + the raw records of two partial buckets, instead of ~80,000 records.

Figures measured so far, with their dates and the host's speed: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from bench._server import django_in_live_env

INGEST_TARGET = 20000.0
WINDOW_TARGET_MS = 100.0
T0 = 1_700_000_000.0
SPAN = 3600.0  # one hour of traffic


def make_records(rng: random.Random, n: int, offset: int) -> list[dict]:
    out = []
    for i in range(n):
        started = T0 + rng.random() * SPAN
        status = "error" if rng.random() < 0.05 else "ok"
        out.append(
            {
                "requestId": f"r-{offset + i}",
                "namespace": "bench",
                "name": "chat",
                "revision": "canary2" if rng.random() < 0.25 else "stable1",
                "deploymentRevision": "7",
                "modelVersion": "chat-llm:v2",
                "latencyMs": round(rng.uniform(50, 2000), 1),
                "status": status,
                "feedback": round(rng.random(), 3) if rng.random() < 0.5 else None,
                "started": started,
                "finished": started + rng.uniform(0.1, 20),
            }
        )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench records", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=2500)
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, default=20)
    args = parser.parse_args(argv)

    with django_in_live_env():
        from django.conf import settings
        from django.contrib.auth.models import Group, User
        from django.test import Client
        from knox.models import AuthToken

        from controller.models import RequestAggregate, RequestRecord
        from controller.records import store
        from controller.records.figures import DatabaseMetrics
        from rolloutui.services.records import validate

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        user, _ = User.objects.get_or_create(username="bench-shipper")
        user.groups.add(Group.objects.get(name="ingesters"))
        _, token = AuthToken.objects.create(user)
        client = Client(HTTP_AUTHORIZATION=f"Token {token}")
        rng = random.Random(12)

        bodies = [json.dumps(make_records(rng, args.batch_size, b * args.batch_size)) for b in range(args.batches)]
        started, cpu_started = time.perf_counter(), time.process_time()
        for body in bodies:
            resp = client.post("/api/request-records/", data=body, content_type="application/json")
            if resp.status_code != 201:
                raise SystemExit(f"ingestion failed: {resp.status_code} {resp.content[:300]!r}")
        ingest_seconds = time.perf_counter() - started
        ingest_cpu = time.process_time() - cpu_started
        # The sums must stay exact: every ingested record counted once in its bucket's row.
        from django.db.models import Count, Sum

        summed = RequestAggregate.objects.aggregate(n=Sum("requests"), e=Sum("errors"))
        raw = RequestRecord.objects.aggregate(n=Count("id"))
        raw_errors = RequestRecord.objects.filter(status="error").count()
        if (summed["n"], summed["e"]) != (raw["n"], raw_errors) or raw["n"] != args.batches * args.batch_size:
            raise SystemExit(f"ingestion: the sums {summed} disagree with the raw records {raw}, {raw_errors} errors")
        ingested = args.batches * args.batch_size
        rate = ingested / ingest_seconds

        fill_started = time.perf_counter()
        have = ingested
        while have < args.total:
            n = min(5_000, args.total - have)
            store.write_records(validate(make_records(rng, n, have)))
            have += n
        fill_seconds = time.perf_counter() - fill_started
        count = RequestRecord.objects.count()

        metrics = DatabaseMetrics()
        times = []
        figures = {}
        for k in range(args.windows):
            start = T0 + 1200.0 + 37.3 * k  # edges inside buckets
            t = time.perf_counter()
            figures = metrics.window("bench", "chat", "canary2", start, start + 300.0)
            times.append((time.perf_counter() - t) * 1000)
        median_ms, worst_ms = statistics.median(times), max(times)
        backend = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]

    result = {
        "database": backend,
        "ingestRecords": ingested,
        "ingestBatchSize": args.batch_size,
        "ingestSeconds": round(ingest_seconds, 3),
        "ingestRecordsPerSecond": round(rate),
        "ingestCpuSeconds": round(ingest_cpu, 3),
        "ingestRecordsPerCpuSecond": round(ingested / ingest_cpu),
        "ingestTarget": INGEST_TARGET,
        "ingestMet": rate >= INGEST_TARGET,
        "windowMet": median_ms < WINDOW_TARGET_MS,
        "records": count,
        "fillSeconds": round(fill_seconds, 1),
        "windowMedianMs": round(median_ms, 2),
        "windowWorstMs": round(worst_ms, 2),
        "windowTargetMs": WINDOW_TARGET_MS,
        "windowRequests": figures.get("requests"),
        "pass": rate >= INGEST_TARGET and median_ms < WINDOW_TARGET_MS,
    }
    print(f"database                      {backend}")
    print(
        f"ingestion through the API     {ingested:,} records in {ingest_seconds:.2f} s = {rate:,.0f} records/s"
        f"  (target >= {INGEST_TARGET:,.0f}: {'met' if rate >= INGEST_TARGET else 'missed'})"
    )
    print(f"  per CPU second               {ingested / ingest_cpu:,.0f} records/s ({ingest_cpu:.2f} s of CPU)")
    print(f"records in the database       {count:,} (filled in {fill_seconds:.1f} s)")
    print(
        f"one analysis window (300 s)   median {median_ms:.2f} ms, worst {worst_ms:.2f} ms over {args.windows}"
        f"  (target < {WINDOW_TARGET_MS:.0f} ms: {'met' if median_ms < WINDOW_TARGET_MS else 'missed'};"
        f" {figures.get('requests')} requests in it)"
    )
    print("PASS" if result["pass"] else "FAIL")
    if args.json:
        print(json.dumps(result))
    return 0 if result["pass"] else 1
