"""What each compute type can run: the compute-targets seed's tables as data (pure)."""
from dataclasses import asdict, dataclass

# The seed's training table lost its empty cells in translation: rows with one "yes" read as AutoML.
# Azure ML uses Data Lake Analytics, HDInsight and Batch only as pipeline steps, so the "yes" of those
# rows is the pipelines column; every other row has as many cells as the seed shows.


@dataclass(frozen=True)
class Capability:
    type: str
    display_name: str
    management: str  # managed | attached | local | serverless
    is_record: bool  # False for `local` and serverless, which need no compute record
    automl: bool
    automl_note: str
    pipelines: bool
    designer: bool
    command_jobs: bool  # Dockyard runs command jobs on it
    realtime_inference: bool
    batch_inference: bool
    gpu: bool
    nodes: str  # single | multi | n/a
    autoscale_on_submit: bool
    description: str


CAPABILITIES: tuple[Capability, ...] = (
    Capability("local", "Local computer", "local", False, True, "", False, False, True, True, False, False,
               "single", False, "Runs on the worker's host; for small experiments and debugging."),
    Capability("amlcompute", "Compute cluster", "managed", True, True, "", True, True, True, False, False, True,
               "multi", True, "Single- or multi-node cluster that scales on each job submission."),
    Capability("serverless", "Serverless compute", "serverless", False, True, "", True, True, True, True, True,
               True, "multi", True, "No record: a job without `compute` is placed by Dockyard."),
    Capability("computeinstance", "Compute instance", "managed", True, True, "through the SDK", True, True, True,
               False, False, True, "single", False, "A single-node development machine with idle shutdown."),
    Capability("kubernetes", "Kubernetes cluster", "attached", True, True, "", True, False, True, True, True, True,
               "multi", False, "Your cluster; training and real-time or batch inference."),
    Capability("virtualmachine", "Remote virtual machine", "attached", True, True, "", True, False, True, False,
               False, True, "single", False, "An SSH host you manage."),
    Capability("synapsespark", "Apache Spark pool (preview)", "attached", True, True, "SDK local mode only", True,
               False, False, False, False, False, "multi", False, "A Synapse Spark pool."),
    Capability("databricks", "Azure Databricks", "attached", True, True, "SDK local mode only", True, False, False,
               False, False, False, "multi", False, "Local runs and pipeline steps, not a remote training target."),
    Capability("datalakeanalytics", "Azure Data Lake Analytics", "attached", True, False, "", True, False, False,
               False, False, False, "n/a", False, "Pipeline steps only."),
    Capability("hdinsight", "Azure HDInsight", "attached", True, False, "", True, False, False, False, False,
               False, "multi", False, "Pipeline steps only."),
    Capability("batch", "Azure Batch", "attached", True, False, "", True, False, False, False, False, False,
               "multi", False, "Pipeline steps only."),
)

BY_TYPE = {capability.type: capability for capability in CAPABILITIES}


def capability_rows() -> list[dict]:
    return [asdict(capability) for capability in CAPABILITIES]


def supports(compute_type: str, workload: str) -> bool:
    """Whether a type can run a workload (a Capability boolean field, e.g. 'command_jobs')."""
    return bool(getattr(BY_TYPE[compute_type], workload))


# Types Dockyard keeps records of but cannot run anything on yet. Each record says so (`backend` in the API and the
# studio), and jobs and deployments that name one are refused with the reason instead of waiting in a queue.
RECORD_ONLY: dict[str, str] = {
    "hdinsight": (
        "Records only: Azure ML uses HDInsight for pipeline steps, which Dockyard does not run. Dockyard attaches its "
        "SSH head node (host key confirmed, probes shown) and runs nothing there."
    ),
    "databricks": "Records only: Azure ML uses Databricks for pipeline steps, which Dockyard does not run.",
    "synapsespark": "Records only: Azure ML uses Synapse Spark pools for pipeline steps, which Dockyard does not run.",
    "datalakeanalytics": "Records only: Azure ML uses Data Lake Analytics for pipeline steps, which Dockyard does not run.",
    "batch": "Records only: Azure ML uses Azure Batch for pipeline steps, which Dockyard does not run.",
}
