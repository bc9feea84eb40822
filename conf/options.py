"""Every configuration option, with Flink's name where Flink has one.

Options are declared once here; ``yarnflow.yaml`` beside this file and ``-D key=value``
flags only override them. Durations are seconds, memory sizes megabytes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yarnflow.conf.parsers import (
    acl as _acl, choice as _choice, collect_size as _collect_size, exception_names as _exception_names,
    jitter as _jitter, multiplier as _multiplier, partition_store as _partition_store, fraction as _fraction,
    restart_strategy as _restart_strategy, node_label as _node_label, nonneg_int as _nonneg_int,
    pos_float as _pos_float, pos_int as _pos_int, text as _str)
from yarnflow.core.fs.settings import FileSystemSettings, cluster_settings
from yarnflow.core.resources import ResourceSpec
from yarnflow.core.slot_memory import SlotMemory
from yarnflow.core.units import (parse_bool, parse_bytes, parse_duration, parse_memory_mb,
                                 parse_parallelism)

from yarnflow.conf.option import REGISTRY as REGISTRY, RENAMED as RENAMED, Option as Option
from yarnflow.conf.option import option as _option, section as _section

if TYPE_CHECKING:
    from yarnflow.conf.configuration import Configuration

_section("Timeouts and heartbeats")   # FLIP-6 failure detection
HEARTBEAT_INTERVAL = _option("heartbeat.interval", parse_duration, 10.0,
                             "How often TaskExecutors heartbeat the ResourceManager and JobMasters.")
HEARTBEAT_TIMEOUT = _option("heartbeat.timeout", parse_duration, 50.0,
                            "A peer silent this long is declared lost and its slots and tasks fail.")
PROGRESS_INTERVAL = _option(
    "metrics.progress.interval", parse_duration, 2.0,
    "How often a TaskExecutor reports its running subtasks' records, bytes and input progress to their JobMasters; 0 sends them only with state changes and heartbeats.")
RPC_ASK_TIMEOUT = _option("rpc.ask-timeout", parse_duration, 10.0,
                          "Deadline for one RPC between components.")
SLOT_REQUEST_TIMEOUT = _option("slot.request.timeout", parse_duration, 300.0,
                               "How long a JobMaster waits for a requested slot before failing the job.")
SLOT_IDLE_TIMEOUT = _option("slot.idle.timeout", parse_duration, 50.0,
                            "A slot the SlotPool holds unused this long is given back to its TaskExecutor.")
TASKMANAGER_TIMEOUT = _option("resourcemanager.taskmanager-timeout", parse_duration, 30.0,
                              "A TaskExecutor with all slots free this long is stopped and its container released.")
REGISTRATION_TIMEOUT = _option("taskmanager.registration.timeout", parse_duration, 300.0,
                               "A TaskExecutor that cannot register with a ResourceManager this long exits.")
REGISTRATION_INITIAL_BACKOFF = _option("cluster.registration.initial-timeout", parse_duration, 0.1,
                                       "First pause between registration attempts; it doubles each attempt.")
REGISTRATION_MAX_BACKOFF = _option("cluster.registration.max-timeout", parse_duration, 30.0,
                                   "Longest pause between registration attempts.")
WORKER_START_TIMEOUT = _option("resourcemanager.worker.start-timeout", parse_duration, 120.0,
                               "A requested worker that has not registered this long is released and asked again (slow, not a failure of its spec).")
NODE_REPORT_INTERVAL = _option("resourcemanager.node-report.interval", parse_duration, 10.0,
                                "How long a requested worker waits to be placed before YARN's node reports are read, and how often after, to tell a container no live host can hold now (it waits, or idle executors make room) or ever (its requests fail).")
WORKER_RETRY_INTERVAL = _option("resourcemanager.start-worker-retry-interval", parse_duration, 3.0,
                                "First pause before replacing a worker that failed to start; doubles per failure in a row, up to 60 s.")
WORKER_MAX_START_FAILURES = _option("resourcemanager.start-worker-max-failures", _nonneg_int, 5,
                                    "Failed worker starts in a row that blame the worker spec (it exits, outgrows its container) after which pending slot requests fail; a lost host, a preemption or a slow start does not count.")
UPSTREAM_FAILURE_GRACE = _option(
    "jobmaster.upstream-failure.grace", parse_duration, 2.0,
    "How long a task's 'input went away' failure waits for the real cause (a lost executor) before it becomes the job's cause; YARN targets default to 10 s.")
JOB_CANCEL_TIMEOUT = _option("job.cancel.timeout", parse_duration, 30.0,
                             "How long cancelling a job waits for its tasks to acknowledge.")

_section("Failover and restarts")   # seed 003, Flink's task failure recovery
RESTART_STRATEGY = _option(
    "restart-strategy.type", _restart_strategy, "exponential-delay",
    "Whether and when a failed task restarts: none, fixed-delay, exponential-delay or failure-rate.")
FIXED_DELAY_ATTEMPTS = _option("restart-strategy.fixed-delay.attempts", _nonneg_int, 1,
                               "Restarts fixed-delay allows before the job fails.")
FIXED_DELAY_DELAY = _option("restart-strategy.fixed-delay.delay", parse_duration, 1.0,
                            "Pause before each fixed-delay restart.")
EXP_INITIAL_BACKOFF = _option("restart-strategy.exponential-delay.initial-backoff", parse_duration,
                              1.0, "Pause before the first exponential-delay restart.")
EXP_MAX_BACKOFF = _option("restart-strategy.exponential-delay.max-backoff", parse_duration, 60.0,
                          "Longest pause between exponential-delay restarts.")
EXP_MULTIPLIER = _option("restart-strategy.exponential-delay.backoff-multiplier", _multiplier, 2.0,
                         "Each exponential-delay pause is the last one times this.")
EXP_RESET_THRESHOLD = _option(
    "restart-strategy.exponential-delay.reset-backoff-threshold", parse_duration, 3600.0,
    "A failure this long after the previous one starts the backoff and the attempt count afresh.")
EXP_JITTER = _option("restart-strategy.exponential-delay.jitter-factor", _jitter, 0.1,
                     "Each pause varies randomly by up to this fraction, so restarts of many jobs spread.")
EXP_ATTEMPTS = _option(
    "restart-strategy.exponential-delay.attempts-before-reset-backoff", _nonneg_int, 5,
    "Restarts exponential-delay allows (since the last reset) before the job fails; with the defaults a job whose code always raises fails after about 30 s of pauses.")
FAILURE_RATE_MAX = _option("restart-strategy.failure-rate.max-failures-per-interval", _pos_int, 1,
                           "Failures failure-rate tolerates within one interval; one more fails the job.")
FAILURE_RATE_INTERVAL = _option("restart-strategy.failure-rate.failure-rate-interval",
                                parse_duration, 60.0, "The interval failure-rate counts failures in.")
FAILURE_RATE_DELAY = _option("restart-strategy.failure-rate.delay", parse_duration, 1.0,
                             "Pause before each failure-rate restart.")
NON_RECOVERABLE_EXCEPTIONS = _option(
    "restart-strategy.non-recoverable-exceptions", _exception_names, tuple[str, ...](),
    "Exception types (names or module-qualified names, comma-separated) that fail the job at once instead of restarting it, as raising yarnflow.client.NonRecoverableError does.")
FAILOVER_STRATEGY = _option(
    "jobmanager.execution.failover-strategy", _choice("region", "full"), "region",
    "What a task failure restarts: region (its pipelined region and what that needs) or full (every task).")


JOB_RECOVERY_ENABLED = _option(
    "execution.batch.job-recovery.enabled", parse_bool, False,
    "Keep a batch job's progress on the cluster file system, so a new ApplicationMaster attempt runs only the pipelined regions that had not finished.")
PARTITION_STORE = _option(
    "execution.batch.partition-store", _partition_store, "",
    "Where BLOCKING results are written: local (the producer's disk, served by its executor) or dfs (the cluster file system, outliving executors and the ApplicationMaster; their consumers start once the producers finished); empty: dfs with job recovery, else local.")
PARTITION_STORE_DIR = _option(
    "execution.batch.partition-store.dir", _str, "",
    "The directory of dfs results and job event logs (a path or URL); empty: 'partitions' beside session.history-dir.")
BLOB_OFFLOAD_MINSIZE = _option(
    "blob.offload.minsize", parse_bytes, 1 << 20,
    "A deployment part many subtasks share (a vertex's task information, an ALL_TO_ALL input's shuffle descriptors) of at least this size is written once beside the partition store on the cluster file system and read there by each executor, instead of being sent to each.")

_section("Slots, workers and memory")   # fine-grained resource profiles
NUM_TASK_SLOTS = _option("taskmanager.numberOfTaskSlots", _pos_int, 1,
                         "Most slots per TaskExecutor; a per-job worker gets no more than its job needs of that profile.")
DEFAULT_SLOT_CPU = _option("taskmanager.default-slot.cpu", _pos_float, 1.0,
                           "Cores of a slot whose operators declare no ResourceSpec.")
DEFAULT_SLOT_MEMORY = _option("taskmanager.default-slot.memory", parse_memory_mb, 1024,
                              "Memory (MB) of a slot whose operators declare no ResourceSpec.")
WORKER_OVERHEAD_MEMORY = _option("taskmanager.memory.overhead", parse_memory_mb, 256,
                                 "Memory (MB) added to each container for the TaskExecutor's own Python process.")
MANAGED_MEMORY_FRACTION = _option(
    "taskmanager.memory.managed.fraction", _fraction, 0.4,
    "Share of a slot's memory its operators may hold (a hash join's build side, an aggregate's groups, a sort's rows) before they spill to local disk; the rest is for batches in flight.")
SPARK_JVM_OVERHEAD = _option(
    "taskmanager.spark.jvm-overhead", parse_memory_mb, 384,
    "Memory (MB) added to a slot whose operators use Spark, for the Spark JVM's non-heap memory.")
SPARK_HEAP_FRACTION = _option(
    "taskmanager.spark.heap-fraction", _fraction, 0.6,
    "Share of a TaskExecutor's slot memory given to its Spark JVM's heap; the rest holds Arrow data on the Python side.")
SPARK_JVM_OPTIONS = _option(
    "taskmanager.spark.jvm-options", _str, "",
    "Options for the Spark JVM of a TaskExecutor that runs Spark operators (Spark's spark.driver.extraJavaOptions, as Flink's env.java.opts.taskmanager), e.g. its collector or compiler.")
MAX_WORKER_CPU = _option("resourcemanager.max-worker.cpu", _pos_float, 16.0,
                         "Most cores one container may have; larger slot profiles are rejected at submission.")
MAX_WORKER_MEMORY = _option("resourcemanager.max-worker.memory", parse_memory_mb, 32768,
                            "Most memory (MB) one container may have; larger profiles are rejected at submission.")
def default_slot_profile(config: "Configuration") -> ResourceSpec:
    """The slot of a subtask whose operator declares no ResourceSpec."""
    return ResourceSpec(config.get(DEFAULT_SLOT_CPU), config.get(DEFAULT_SLOT_MEMORY))


def largest_worker(config: "Configuration") -> ResourceSpec:
    """The largest container one TaskExecutor may have."""
    return ResourceSpec(config.get(MAX_WORKER_CPU), config.get(MAX_WORKER_MEMORY))


MAX_WORKERS = _option("resourcemanager.max-workers", _pos_int, 64, "Most TaskExecutors the ResourceManager runs at once.")

_section("Execution and data exchange")
DEFAULT_PARALLELISM = _option("parallelism.default", parse_parallelism, 1,
                              "Parallelism of operators that set none.")
BUFFERS_PER_CHANNEL = _option("taskmanager.network.memory.buffers-per-channel", _pos_int, 4,
                              "Record batches a pipelined subpartition holds before its producer blocks (backpressure).")
PARTITION_REQUEST_TIMEOUT = _option(
    "taskmanager.network.partition-request-timeout", parse_duration, 60.0,
    "How long a consumer waits for a producer's partition to appear before failing.")
BATCH_ROWS = _option("pipeline.batch-rows", _pos_int, 65536,
                     "Rows per record batch that a job's sources emit (job-level: each job in a session has its own).")
OPERATOR_CHAINING = _option(
    "pipeline.operator-chaining.enabled", parse_bool, True,
    "Run operators joined by a FORWARD, PIPELINED edge (same parallelism and slot sharing group, one input) as one task (Flink's name); read by the client as it plans the job.")
TMP_DIRS = _option("io.tmp.dirs", _str, "",
                   "Directory for TaskExecutor scratch files; empty means the system temp directory.")
TASK_CANCEL_TIMEOUT = _option("task.cancellation.timeout", parse_duration, 30.0,
                              "A cancelled task still running this long stops its TaskExecutor (whose loss its JobMaster then handles); a JobMaster counts it cancelled then.")

_section("Delegation tokens")
DELEGATION_TOKENS_RENEWAL_TIME_RATIO = _option(
    "security.delegation.tokens.renewal.time-ratio", _fraction, 0.75,
    "With a keytab, a new HDFS delegation token is obtained after this share of the current one's remaining life (Flink's name and default).")
DELEGATION_TOKENS_RENEWAL_RETRY_BACKOFF = _option(
    "security.delegation.tokens.renewal.retry.backoff", parse_duration, 3600.0,
    "How long after a failed attempt to obtain a delegation token the next one is made (Flink's name and default).")
DELEGATION_TOKENS_EXPIRY_WARNING = _option(
    "security.delegation.tokens.expiry-warning", parse_duration, 86400.0,
    "Without a keytab, how long before the application's delegation token ends for good that yarnflow status and the log say so.")

_section("File systems")
FS_DEFAULT_SCHEME = _option(
    "fs.default-scheme", _str, "",
    "File system of paths without a scheme (e.g. hdfs://namenode:9000); empty: fs.defaultFS of HADOOP_CONF_DIR on the YARN targets, the local disk on local.")
FS_ALLOW_LOCAL_PATHS = _option(
    "fs.allow-local-paths", parse_bool, False,
    "Let a job on a cluster read and write file: paths; only for clusters where every node mounts them at the same place.")
FS_HDFS_HTTP_ADDRESS = _option(
    "fs.hdfs.http-address", _str, "",
    "The NameNode's HTTP address (host:port) for WebHDFS; empty: dfs.namenode.http-address of HADOOP_CONF_DIR, else port 9870 of the NameNode's host.")
FS_HDFS_AUTHENTICATION = _option(
    "fs.hdfs.authentication", _choice("", "simple", "kerberos"), "",
    "How WebHDFS calls authenticate: simple (user.name) or kerberos (a container's delegation token, else SPNEGO from the user's ticket); empty: hadoop.security.authentication of HADOOP_CONF_DIR on the YARN targets, else simple.")


def filesystem_settings(config: "Configuration") -> FileSystemSettings:
    """The file system settings the client filled in (``fs.*``), as the ApplicationMaster
    and the executors open their own files with them."""
    return cluster_settings(config.get(FS_DEFAULT_SCHEME), config.get(FS_HDFS_HTTP_ADDRESS),
                            config.get(FS_ALLOW_LOCAL_PATHS),
                            kerberos=config.get(FS_HDFS_AUTHENTICATION) == "kerberos")


SOURCE_SPLIT_SIZE = _option(
    "pipeline.source.split-size", parse_bytes, 128 << 20,
    "Most bytes of an input split (a Parquet file's consecutive row groups, a CSV byte range, an in-memory table's row range); smaller inputs get about four splits per subtask (Spark's spark.sql.files.maxPartitionBytes).")
SOURCE_FAIR_SHARE_WAIT = _option(
    "source.fair-share-wait", parse_duration, 30.0,
    "How long a source subtask's fair share of the splits (total / parallelism) is held for it before it first asks, so subtasks whose executors start first do not take everything.")
SOURCE_LOCALITY_WAIT = _option(
    "source.locality-wait", parse_duration, 3.0,
    "How long a source subtask with no split left on its own host waits before reading one another subtask would read locally (Spark's spark.locality.wait).")

_section("Planner")
BROADCAST_THRESHOLD = _option(
    "planner.broadcast-threshold", parse_bytes, 10 * 2**20,
    "A join with strategy 'auto' broadcasts a side estimated at most this large (bytes; '10 mb') and keeps the other side where it is.")

_section("Adaptive batch execution")   # Flink's AdaptiveBatchScheduler
ADAPTIVE_ENABLED = _option(
    "execution.batch.adaptive.enabled", parse_bool, False,
    "Decide at run time, from the bytes its finished BLOCKING inputs measured, the parallelism of every operator whose parallelism was not set with set_parallelism(); exchanges become BLOCKING where the pipeline names none.")
ADAPTIVE_MIN_PARALLELISM = _option(
    "execution.batch.adaptive.auto-parallelism.min-parallelism", _pos_int, 1,
    "Least parallelism adaptive execution gives an operator (Flink's name and default).")
ADAPTIVE_MAX_PARALLELISM = _option(
    "execution.batch.adaptive.auto-parallelism.max-parallelism", _pos_int, 128,
    "Most parallelism adaptive execution gives an operator, and so the subpartitions each producer before it writes (Flink's name and default).")
ADAPTIVE_AVG_DATA_VOLUME = _option(
    "execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task", parse_bytes, 16 * 2**20,
    "Bytes each subtask of an adaptive operator should read (Arrow bytes its producers wrote; Flink's name and default, 16 mb).")
ADAPTIVE_SLOT_MEMORY = _option(
    "execution.batch.adaptive.slot-memory.enabled", parse_bool, True,
    "Under adaptive execution, size the slots of an operator without a ResourceSpec from the bytes its largest subtask reads, and ask for containers of that size.")
ADAPTIVE_SLOT_MEMORY_MIN = _option(
    "execution.batch.adaptive.slot-memory.min", parse_memory_mb, 64,
    "Least memory (MB) of an adaptively sized slot; sizes go up from it in powers of two.")
ADAPTIVE_SLOT_MEMORY_MAX = _option(
    "execution.batch.adaptive.slot-memory.max", parse_memory_mb, 8192,
    "Most memory (MB) of an adaptively sized slot (and never more than the largest container holds).")
ADAPTIVE_SLOT_MEMORY_EXACT = _option(
    "execution.batch.adaptive.slot-memory.exact", parse_bool, True,
    "Only an executor of its very size serves a sized slot, never a larger idle one (a yarn-session, whose warm executors are paid for already, sets false).")
ADAPTIVE_SLOT_MEMORY_PER_BYTE = _option(
    "execution.batch.adaptive.slot-memory.read-factor", _pos_float, 3.0,
    "Memory an adaptively sized slot gets per byte its largest subtask reads (the rows held, a join's hash table, Arrow's copies), at least the minimum.")


def slot_memory(config: "Configuration") -> SlotMemory:
    """How adaptive execution sizes slots; the maximum never above what the largest
    container holds after the executor's own overhead."""
    largest = config.get(MAX_WORKER_MEMORY) - config.get(WORKER_OVERHEAD_MEMORY)
    return SlotMemory(config.get(ADAPTIVE_ENABLED) and config.get(ADAPTIVE_SLOT_MEMORY),
                      config.get(ADAPTIVE_SLOT_MEMORY_MIN),
                      max(config.get(ADAPTIVE_SLOT_MEMORY_MIN),
                          min(config.get(ADAPTIVE_SLOT_MEMORY_MAX), largest)),
                      config.get(ADAPTIVE_SLOT_MEMORY_PER_BYTE),
                      config.get(ADAPTIVE_SLOT_MEMORY_EXACT))


SKEWED_JOIN_STRATEGY = _option(
    "table.optimizer.skewed-join-optimization.strategy", _choice("none", "auto"), "auto",
    "Under adaptive execution, split a hash join's skewed partition across several subtasks, the other side's matching partition read by each (auto), or never (none); Flink's name.")
SKEWED_JOIN_FACTOR = _option(
    "table.optimizer.skewed-join-optimization.skewed-factor", _pos_float, 4.0,
    "A join partition is skewed when its bytes exceed this many times the median partition's (and the threshold); Flink's name and default.")
SKEWED_JOIN_THRESHOLD = _option(
    "table.optimizer.skewed-join-optimization.skewed-threshold", parse_bytes, 256 * 2**20,
    "A join partition is skewed only above these bytes (and the factor); Flink's name and default.")

AGG_PHASE_STRATEGY = _option(
    "table.optimizer.agg-phase-strategy", _choice("auto", "one_phase", "two_phase"), "auto",
    "Aggregate in two phases, a local partial aggregate chained to each producer before the exchange and a final one after, where every function decomposes (AUTO, TWO_PHASE), or every row across the exchange (ONE_PHASE); Flink's name. AUTO lets a local step that does not reduce pass its input on.")
LOCAL_AGG_ADAPTIVE = _option(
    "table.exec.local-hash-agg.adaptive.enabled", parse_bool, True,
    "Under AUTO, a local aggregate or distinct whose groups hardly repeat stops holding them and passes each batch's partial results on; Flink's name.")
LOCAL_AGG_SAMPLING = _option(
    "table.exec.local-hash-agg.adaptive.sampling-threshold", _pos_int, 500_000,
    "Input rows a local aggregate or distinct reads before it judges whether it reduces; Flink's name and default.")
LOCAL_AGG_RATE = _option(
    "table.exec.local-hash-agg.adaptive.distinct-value-rate-threshold", _fraction, 0.5,
    "A local aggregate or distinct that kept more groups than this share of its input rows passes its input on; Flink's name and default.")

_section("Results brought back to the client")   # collect()
COLLECT_MAX_RESULT_SIZE = _option(
    "pipeline.collect.max-result-size", _collect_size, 64 * 2**20,
    "The most bytes (as Arrow) collect(), to_arrow() and to_pandas() bring back through the JobMaster; a larger result fails the job naming this option (Spark's spark.driver.maxResultSize); at most 192 mb.")
COLLECT_RESULT_TIMEOUT = _option(
    "pipeline.collect.result-timeout", parse_duration, 300.0,
    "How long an ApplicationMaster keeps a collected result its client has not fetched; a per-job application waits this long for its client before it ends.")

_section("Targets and the local run")
TARGETS = ("local", "yarn-per-job", "yarn-session")


def _target(value: object) -> str:
    name = str(value).strip()
    if name not in TARGETS:
        raise ValueError(f"{value!r} is not a target; use {', '.join(TARGETS[:-1])} or "
                         f"{TARGETS[-1]}")
    return name


TARGET = _option("execution.target", _target, "local",
                 "Where jobs run: local, yarn-per-job or yarn-session.")
LOCAL_PYTHON = _option("local.python", _str, "",
                       "Python interpreter for local TaskExecutors; empty means the client's own.")
LOCAL_LOG_DIR = _option("local.log-dir", _str, "",
                        "Where local jobs keep their TaskExecutors' logs, a directory per run; empty: ~/.yarnflow/local-logs ($YARNFLOW_HOME).")
LOCAL_LOG_RETENTION = _option("local.log-retention", _pos_int, 10,
                              "How many local runs keep their logs under local.log-dir; older runs' logs are removed.")
ATTACHED = _option("execution.attached", parse_bool, False,
                   "Whether `yarnflow run` on YARN follows the job to its end (local always does).")

# defaults of the YARN targets where they differ: a key a file or flag sets keeps its value
YARN_TARGET_DEFAULTS: dict[str, Any] = {
    "jobmaster.upstream-failure.grace": 10.0,   # Skein learns of a dead container within ~5 s
}


def target_defaults(target: str) -> dict[str, Any]:
    return dict(YARN_TARGET_DEFAULTS) if target.startswith("yarn-") else {}

_section("Test only")   # fault injection: yarnflow.rpc.testing.faults, taskexecutor/straggler.py
TEST_RPC_FAULTS = _option(
    "test.rpc.faults", _str, "",
    "Test only: calls between components to drop, duplicate or delay ('<method>=<action>[:<probability>[:<times>]]; ...', see rpc/testing/faults.py); empty, the default, injects nothing.")
TEST_RPC_FAULTS_SEED = _option("test.rpc.faults.seed", _nonneg_int, 0,
                               "Test only: the seed of test.rpc.faults' random draws.")
TEST_SLOW_HOSTS = _option(
    "test.taskmanager.slow-hosts", _str, "",
    "Test only: 'HOST=FACTOR,...': tasks of executors on HOST run FACTOR times slower (taskexecutor/straggler.py); empty, the default, slows nothing.")
TEST_FAILING_HOSTS = _option(
    "test.taskmanager.failing-hosts", _str, "",
    "Test only: 'HOST,...': every task of executors on HOST fails as it starts; empty, the default, fails nothing.")

_section("YARN")
YARN_APP_NAME = _option("yarn.application.name", _str, "",
                        "YARN application name; empty means the job's name.")
YARN_QUEUE = _option("yarn.application.queue", _str, "default",
                     "YARN queue the application is submitted to.")
YARN_APP_NODE_LABEL = _option(
    "yarn.application.node-label", _node_label, "",
    "YARN node label (partition) of the ApplicationMaster and, unless set otherwise, of every container; empty: the default partition.")
YARN_TM_NODE_LABEL = _option(
    "yarn.taskmanager.node-label", _node_label, "",
    "YARN node label of the TaskExecutors' containers whose slot profile names none (a ResourceSpec's node_label wins); empty: yarn.application.node-label.")
YARN_VIEW_ACLS = _option(
    "yarn.view.acls", _acl, "",
    "Who else may view the application in YARN and open its web UI, as 'users groups' ('*': everyone; the web UI admits users, not groups); the owner and YARN's admins always may.")
YARN_MODIFY_ACLS = _option(
    "yarn.modify.acls", _acl, "",
    "Who else may kill the application, as 'users groups' ('*': everyone); the owner and YARN's admins always may.")
JOBMANAGER_PROCESS_MEMORY = _option("jobmanager.memory.process.size", parse_memory_mb, 0,
                         "ApplicationMaster container memory (MB); 0: per-job sized from the job, a session 1024.")
YARN_AM_VCORES = _option("yarn.appmaster.vcores", _pos_int, 1,
                         "ApplicationMaster container vcores.")
YARN_PYTHON = _option("yarn.python", _str, "",
                      "A Python interpreter with yarnflow installed on every node; set, nothing is shipped.")
YARN_SHIP_ENVIRONMENT = _option("yarn.ship-environment", _str, "",
                                "A packed environment (venv-pack/conda-pack .tar.gz, local or on the cluster) that every container runs; empty, the default, packs and ships the client's virtual environment.")
YARN_ENVIRONMENT_PYTHON_PREFIX = _option(
    "yarn.environment.python-prefix", _str, "/usr",
    "Where the nodes' own Python is: a packed virtual environment's bin/python runs <prefix>/bin/pythonX.Y there, of the client's X.Y.")
YARN_ENVIRONMENT_CACHE_DIR = _option(
    "yarn.environment.cache-dir", _str, "",
    "Where shipped environments are uploaded once, named by their content; empty: /user/<user>/.yarnflow-environments on the cluster's file system.")
YARN_CLIENT_TIMEOUT = _option("yarn.client.timeout", parse_duration, 30.0,
                              "How long the client waits for YARN's ResourceManager before calling it unreachable.")
YARN_APPLICATION_ATTEMPTS = _option(
    "yarn.application-attempts", _pos_int, 2,
    "ApplicationMaster attempts YARN makes before the application fails: a new attempt re-runs a job that had not ended; YARN's yarn.resourcemanager.am.max-attempts caps it. With more than one, a failed or cancelled job's application ends in one more short attempt (Skein ends a non-last attempt only on success).")
YARN_ATTEMPT_FAILURES_VALIDITY_INTERVAL = _option(
    "yarn.application-attempt-failures-validity-interval", parse_duration, 0.0,
    "Failed attempts older than this would not count toward yarn.application-attempts; 0, the default and the only value Skein 0.8.2 can submit, counts them all (any other value is refused).")
YARN_CONTAINER_POLL_INTERVAL = _option("yarn.container-poll-interval", parse_duration, 0.5,
                                       "How often the ApplicationMaster checks Skein for completed containers.")
YARN_SKEIN_TIMEOUT = _option(
    "yarn.appmaster.skein-timeout", parse_duration, 10.0,
    "How long the ApplicationMaster waits for Skein's ApplicationMaster (in the same container) to answer a container call (ask, release, list); an ask answered later is still taken, its container adopted.")
YARN_AM_NODEMANAGER_TIMEOUT = _option(
    "yarn.appmaster.nodemanager-timeout", parse_duration, 30.0,
    "Longest that Skein's ApplicationMaster spends starting a container on a NodeManager that does not answer (a dead or frozen host), in the Hadoop configuration the client ships it; every container start waits behind such a one.")
YARN_LOCALITY_WAIT = _option(
    "yarn.locality.wait", parse_duration, 3.0,
    "How long an executor asked on the host that stores its input waits for YARN to place it there before it is asked anywhere (Spark's spark.locality.wait, for containers), counted from Skein's next heartbeat to YARN (up to 5 s).")
YARN_LOCALITY_MAX_HOSTS = _option(
    "yarn.locality.max-hosts", _nonneg_int, 100,
    "Executors are asked on the hosts that store their input when YARN has at most this many running NodeManagers (a Skein service per container size and host); 0 never asks for hosts.")

_section("Kerberos")   # a cluster in Hadoop's secure mode; Flink's names
KERBEROS_USE_TICKET_CACHE = _option(
    "security.kerberos.login.use-ticket-cache", parse_bool, True,
    "On a Kerberos cluster without a keytab, log in from the user's ticket cache (after kinit).")
KERBEROS_KEYTAB = _option(
    "security.kerberos.login.keytab", _str, "",
    "A keytab the client logs in with, as security.kerberos.login.principal; empty: the ticket cache.")
KERBEROS_PRINCIPAL = _option(
    "security.kerberos.login.principal", _str, "",
    "The principal of security.kerberos.login.keytab, e.g. alice@EXAMPLE.COM.")

_section("Blocklist")   # FLIP-224; Spark's excludeOnFailure
BLOCKLIST_ENABLED = _option(
    "cluster.resource-blocklist.enabled", parse_bool, False,
    "Keep jobs off hosts that keep failing tasks: no new slots or containers there for cluster.resource-blocklist.item.timeout.")
BLOCKLIST_TASK_FAILURES = _option(
    "cluster.resource-blocklist.task-failures", _pos_int, 3,
    "Task failures on one host within cluster.resource-blocklist.failure-window that block it.")
BLOCKLIST_FAILURE_WINDOW = _option(
    "cluster.resource-blocklist.failure-window", parse_duration, 300.0,
    "How far back task failures on a host count towards blocking it.")
BLOCKLIST_ITEM_TIMEOUT = _option(
    "cluster.resource-blocklist.item.timeout", parse_duration, 600.0,
    "How long a blocked host stays blocked.")

_section("Speculative execution")   # of batch jobs, Flink's FLIP-168
SPECULATIVE_ENABLED = _option(
    "execution.batch.speculative.enabled", parse_bool, False,
    "Give a slow subtask of a batch (BLOCKING) stage a second attempt on another host; the first to finish wins.")
SPECULATIVE_MAX_CONCURRENT = _option(
    "execution.batch.speculative.max-concurrent-executions", _pos_int, 2,
    "Attempts of one subtask that may run at once, the original included.")
SPECULATIVE_BLOCK_SLOW_NODE_DURATION = _option(
    "execution.batch.speculative.block-slow-node-duration", parse_duration, 60.0,
    "How long a host found slow is blocked (no new slots or containers there); 0 blocks none.")
SPECULATIVE_BLOCK_SLOW_NODE_AFTER = _option(
    "execution.batch.speculative.block-slow-node-after", _pos_int, 1,
    "Slow subtasks found on one host within cluster.resource-blocklist.failure-window that block it (Flink blocks at the first).")
SLOW_TASK_CHECK_INTERVAL = _option(
    "slow-task-detector.check-interval", parse_duration, 1.0,
    "How often the JobMaster looks for slow subtasks.")
SLOW_TASK_BASELINE_RATIO = _option(
    "slow-task-detector.execution-time.baseline-ratio", _fraction, 0.75,
    "Share of a stage's subtasks that must have finished before its others can be found slow.")
SLOW_TASK_BASELINE_MULTIPLIER = _option(
    "slow-task-detector.execution-time.baseline-multiplier", _pos_float, 1.5,
    "A subtask running longer than this times the median time of its stage's finished subtasks is slow.")
SLOW_TASK_BASELINE_LOWER_BOUND = _option(
    "slow-task-detector.execution-time.baseline-lower-bound", parse_duration, 60.0,
    "A subtask is never slow before it has run this long.")

_section("Web UI and REST API")   # the web monitor
REST_BIND_ADDRESS = _option(
    "rest.bind-address", _str, "127.0.0.1",
    "Address the web UI and REST API bind to; on YARN the default loopback is reached only through the ResourceManager's proxy (Skein's page route).")
REST_BIND_PORT = _option("rest.bind-port", _nonneg_int, 0,
                         "Port of the web UI and REST API; 0 picks a free one.")
WEB_REFRESH_INTERVAL = _option("web.refresh-interval", parse_duration, 2.0,
                               "How often the web page refreshes.")
LOCAL_WEB_UI = _option("local.web-ui", parse_bool, False,
                       "Serve the web UI and REST API during a local run and print its URL (`yarnflow run --ui`).")

_section("Sessions")
SESSION_CONTAINER_SIZES = _option(
    "session.container-sizes", _str, "1c-1536m, 2c-3072m, 4c-6144m",
    "A session's container sizes ('<cores>c-<memory>', comma-separated); each worker gets the smallest that fits its slot.")
SESSION_HISTORY_DIR = _option(
    "session.history-dir", _str, "",
    "Where ended jobs are archived, by a session and by a per-job application (a path or URL; hdfs:// goes through WebHDFS); empty: /user/<user>/.yarnflow/history on HDFS, else ~/.yarnflow/history.")
JOBSTORE_MAX_CAPACITY = _option("jobstore.max-capacity", _pos_int, 1000,
                                "Finished jobs a session keeps in memory; older ones are read back from the history.")
JOB_GRAPH_STORE_WRITE_TIMEOUT = _option(
    "session.job-graph-store.write-timeout", parse_duration, 10.0,
    "How long a session waits for the cluster file system to keep a submitted job before it rejects the job.")
SESSION_MIN_EXECUTORS = _option("session.min-executors", _nonneg_int, 0,
                                "TaskExecutors a session starts at once and keeps warm however long they idle.")
SESSION_START_TIMEOUT = _option("session.start-timeout", parse_duration, 180.0,
                                "How long `yarnflow session start` waits for the session's Dispatcher to answer.")
YARN_APPLICATION_ID = _option("yarn.application.id", _str, "",
                              "The session (application id or name) `-t yarn-session` submits to; empty: the only running one.")


# declared in their own module, listed here so every option is reached through this one
from yarnflow.conf.streaming_options import (  # noqa: E402
    BUFFER_TIMEOUT as BUFFER_TIMEOUT,
    CHECKPOINT_INTERVAL as CHECKPOINT_INTERVAL,
    CHECKPOINT_MAX_CONCURRENT as CHECKPOINT_MAX_CONCURRENT,
    CHECKPOINT_MIN_PAUSE as CHECKPOINT_MIN_PAUSE,
    CHECKPOINT_TIMEOUT as CHECKPOINT_TIMEOUT,
    CHECKPOINT_TOLERABLE_FAILURES as CHECKPOINT_TOLERABLE_FAILURES,
    CHECKPOINTS_DIR as CHECKPOINTS_DIR,
    CHECKPOINTS_RETAINED as CHECKPOINTS_RETAINED,
    MAX_PARALLELISM as MAX_PARALLELISM,
    RUNTIME_MODE as RUNTIME_MODE,
    PARTITION_DISCOVERY_INTERVAL as PARTITION_DISCOVERY_INTERVAL,
    SOURCE_DESERIALIZATION_ERRORS as SOURCE_DESERIALIZATION_ERRORS,
    SAVEPOINTS_DIR as SAVEPOINTS_DIR,
    SAVEPOINT_PATH as SAVEPOINT_PATH,
    SAVEPOINT_IGNORE_UNCLAIMED as SAVEPOINT_IGNORE_UNCLAIMED,
    ROLLING_FILE_SIZE as ROLLING_FILE_SIZE,
    ROLLING_ROLLOVER_INTERVAL as ROLLING_ROLLOVER_INTERVAL,
    ROLLING_INACTIVITY_INTERVAL as ROLLING_INACTIVITY_INTERVAL,
)

