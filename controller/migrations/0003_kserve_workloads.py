"""KServe on the simulated cluster (issue 13): ``SimObject.controller`` (the name of the workload
object that controls a row: a pod's ReplicaSet, a ReplicaSet's Deployment, a Deployment's
InferenceService) with an index the simulated controllers list by, and ``SimTraffic.kind`` so an
InferenceService can receive traffic too (unique per kind, namespace and name). Existing rows are
ModelServing traffic and objects without a workload controller: the defaults."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("controller", "0002_kubelet_state_per_container"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="simtraffic",
            name="simtraffic_ns_name",
        ),
        migrations.AddField(
            model_name="simobject",
            name="controller",
            field=models.CharField(blank=True, default="", max_length=253),
        ),
        migrations.AddField(
            model_name="simtraffic",
            name="kind",
            field=models.CharField(default="ModelServing", max_length=32),
        ),
        migrations.AddIndex(
            model_name="simobject",
            index=models.Index(fields=["kind", "namespace", "controller"], name="simobject_controller_idx"),
        ),
        migrations.AddConstraint(
            model_name="simtraffic",
            constraint=models.UniqueConstraint(fields=("kind", "namespace", "name"), name="simtraffic_kind_ns_name"),
        ),
    ]
