"""Dockyard settings: one module, every difference between installs comes from the environment."""
import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from controlplane import install_keys

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DOCKYARD_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# Mode
# Production mode refuses to start with development secrets and turns off host-level features.
PRODUCTION = os.environ.get("DOCKYARD_MODE", "development").lower() == "production"
DEBUG = env_bool("DEBUG", False)

# Keys: production takes them from the environment. Development generates its own on first start into VAR_DIR
# (secret-key, field-keys; 0600), so no two installs share one (a database dump never decrypts with a published
# key) and web, worker and beat, reading the same files, agree. The environment, when set, wins in both modes.
SECRET_KEY = os.environ.get("SECRET_KEY", "")
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS")
if PRODUCTION and not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in production mode.")
if PRODUCTION and not FIELD_ENCRYPTION_KEYS:
    raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS must be set in production mode.")
SECRET_KEY = SECRET_KEY or install_keys.load_or_create(VAR_DIR / "secret-key", install_keys.new_secret_key)
# One key a line: the first encrypts, every one decrypts (add a line to rotate).
FIELD_ENCRYPTION_KEYS = FIELD_ENCRYPTION_KEYS or install_keys.load_or_create(
    VAR_DIR / "field-keys", install_keys.new_field_key).split()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "" if PRODUCTION else "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Applications
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "workspaces",
    "compute",
    "jobs",
    "endpoints",
    "assets",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "controlplane.middleware.ContentSecurityPolicyMiddleware",
    "controlplane.middleware.BodyLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "controlplane.urls"
WSGI_APPLICATION = "controlplane.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "frontend" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database
# The embedded default is SQLite (WAL, see compute/apps.py) under ./var; DATABASE_URL selects PostgreSQL.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'dockyard.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Cache (throttling); Redis when REDIS_URL is set, otherwise per-process memory
REDIS_URL = os.environ.get("REDIS_URL", "")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# Auth
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out sign-in (studio and admin) before any password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
# Lockout after this many failed sign-ins, counted per client address and per user name separately, for this long.
AXES_FAILURE_LIMIT = int(os.environ.get("DOCKYARD_LOGIN_FAILURES", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("DOCKYARD_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True  # a good sign-in forgets its user's earlier typos
AXES_LOCKOUT_TEMPLATE = "frontend/login.html"  # the sign-in page, saying why and for how long
LOGIN_URL = "frontend:login"
LOGIN_REDIRECT_URL = "frontend:home"
LOGOUT_REDIRECT_URL = "frontend:login"
API_TOKEN_DEFAULT_DAYS = int(os.environ.get("DOCKYARD_TOKEN_DAYS", "90"))
# Failed bearer-token authentications per client address (workspaces.throttling); past it every bearer request gets 429.
DOCKYARD_THROTTLE_FAILED_AUTH = os.environ.get("DOCKYARD_THROTTLE_FAILED_AUTH", "30/min")

# Internationalisation
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files: our own from frontend/static (the app's folder), third-party ones installed by npm into frontend/node_modules
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # collectstatic fills it in production; WhiteNoise wants it to exist
STATICFILES_DIRS = []
_NODE_MODULES = BASE_DIR / "frontend" / "node_modules"
# Only the folders the studio links to: WhiteNoise indexes every served file each time a handler starts (each test client).
for _package in ("bootstrap/dist", "bootstrap-icons/font", "htmx.org/dist"):
    if (_NODE_MODULES / _package).is_dir():
        STATICFILES_DIRS.append((f"vendor/{_package}", _NODE_MODULES / _package))
WHITENOISE_USE_FINDERS = True

# REST framework
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "workspaces.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "controlplane.parsers.JSONParser",
        "controlplane.parsers.YAMLParser",
        "controlplane.parsers.FormParser",
        "controlplane.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "controlplane.pagination.PagePagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "controlplane.schema.AutoSchema",
    "EXCEPTION_HANDLER": "controlplane.api.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("DOCKYARD_THROTTLE_ANON", "120/min"),
        "user": os.environ.get("DOCKYARD_THROTTLE_USER", "6000/min"),
        # failed scoring authentications per client address (wrong key, unknown endpoint): then 429 for everything
        "score_auth": os.environ.get("DOCKYARD_THROTTLE_SCORE_AUTH", "30/min"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # How many reverse proxies stand in front: 0 throttles by REMOTE_ADDR, never by a client-written X-Forwarded-For.
    "NUM_PROXIES": int(os.environ.get("DOCKYARD_NUM_PROXIES", "0")),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Dockyard API",
    "DESCRIPTION": "Self-hosted control plane for machine-learning compute.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # validatorUrl null: Swagger UI would otherwise send the schema's URL to validator.swagger.io (air-gapped installs).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "ENUM_NAME_OVERRIDES": {
        "RoleEnum": "workspaces.choices.Role",
        "ProvisioningStateEnum": "controlplane.reconciling.ProvisioningState",
    },
}

# Celery: at-least-once delivery; the models hold the truth, so there is no result backend.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "filesystem://"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("DOCKYARD_QUEUE", "dockyard")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Longer than the slowest task, so a message whose worker is busy is not redelivered to another.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _BROKER_DIR = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        data_folder_in=str(_BROKER_DIR / "queue"),
        data_folder_out=str(_BROKER_DIR / "queue"),
        processed_folder=str(_BROKER_DIR / "processed"),
        control_folder=str(_BROKER_DIR / "control"),  # kombu's default is ./control, in whatever folder runs it
        store_processed=False,
    )
    (_BROKER_DIR / "queue").mkdir(parents=True, exist_ok=True)
DOCKYARD_RESYNC_SECONDS = int(os.environ.get("DOCKYARD_RESYNC_SECONDS", "60"))
# Client-side rate limit per cluster and per worker process (calls per second, burst).
DOCKYARD_KUBE_QPS = float(os.environ.get("DOCKYARD_KUBE_QPS", "20"))
DOCKYARD_KUBE_BURST = int(os.environ.get("DOCKYARD_KUBE_BURST", "40"))
# How often an attached cluster's checks (reachable, namespace, rights, CRD) are repeated when it is healthy.
DOCKYARD_CLUSTER_CHECK_SECONDS = int(os.environ.get("DOCKYARD_CLUSTER_CHECK_SECONDS", "300"))
# Attached VMs: where jobs live on the host, relative to the SSH user's home (one folder per job record), and how
# often a running job is looked at over SSH (status and new log bytes in one command).
DOCKYARD_SSH_JOBS_DIR = os.environ.get("DOCKYARD_SSH_JOBS_DIR", ".dockyard/jobs")
DOCKYARD_SSH_LOOK_SECONDS = float(os.environ.get("DOCKYARD_SSH_LOOK_SECONDS", "2"))
# How often artifact storage is collected (assets/collect.py): abandoned uploads, unnamed snapshots, unlisted blobs.
DOCKYARD_ARTIFACT_COLLECT_SECONDS = int(os.environ.get("DOCKYARD_ARTIFACT_COLLECT_SECONDS", "3600"))
# How often compute clusters' node pools are observed (node counts, idle nodes, autoscaler refusals, drift); only
# Succeeded compute clusters, and a steady pool writes nothing.
DOCKYARD_POOL_OBSERVE_SECONDS = float(os.environ.get("DOCKYARD_POOL_OBSERVE_SECONDS", "5"))
# The image of the placeholder pods that hold a compute cluster's min_instances nodes (they only sleep).
DOCKYARD_PLACEHOLDER_IMAGE = os.environ.get("DOCKYARD_PLACEHOLDER_IMAGE", "registry.k8s.io/pause:3.10")
# Compute instances: the server images (JupyterLab from Jupyter Docker Stacks; VS Code in the browser as a second
# container), how often running instances are observed and probed for activity (idle shutdown), and how many seconds
# make one minute of `idle_time_before_shutdown` (60; tests shorten it so a 15-minute threshold passes in seconds).
DOCKYARD_INSTANCE_IMAGE = os.environ.get("DOCKYARD_INSTANCE_IMAGE", "quay.io/jupyter/scipy-notebook:2025-12-01")
DOCKYARD_CODE_SERVER_IMAGE = os.environ.get("DOCKYARD_CODE_SERVER_IMAGE", "docker.io/codercom/code-server:4.106.3")
# The size of a compute instance's home volume when its record does not say (`disk_size_gb`), in GiB.
DOCKYARD_INSTANCE_DISK_GB = int(os.environ.get("DOCKYARD_INSTANCE_DISK_GB", "32"))
DOCKYARD_INSTANCE_PROBE_SECONDS = float(os.environ.get("DOCKYARD_INSTANCE_PROBE_SECONDS", "60"))
DOCKYARD_IDLE_SECONDS_PER_MINUTE = float(os.environ.get("DOCKYARD_IDLE_SECONDS_PER_MINUTE", "60"))
# Start/stop schedules are checked this often (a schedule fires at most this late).
DOCKYARD_SCHEDULE_SECONDS = float(os.environ.get("DOCKYARD_SCHEDULE_SECONDS", "30"))
# Local compute instances (`kubernetes_compute: local`): JupyterLab in the sandbox from this virtualenv (made by
# bin/setup from requirements-notebook.txt), one folder per instance (its home, kept across stops) under this folder.
DOCKYARD_NOTEBOOK_VENV = Path(os.environ.get("DOCKYARD_NOTEBOOK_VENV", BASE_DIR / ".venv-notebook"))
DOCKYARD_INSTANCE_DIR = Path(os.environ.get("DOCKYARD_INSTANCE_DIR", VAR_DIR / "instances"))
CELERY_BEAT_SCHEDULE = {
    "resync": {"task": "compute.tasks.resync", "schedule": timedelta(seconds=DOCKYARD_RESYNC_SECONDS)},
    "observe-pools": {"task": "compute.tasks.observe_compute_clusters",
                      "schedule": timedelta(seconds=DOCKYARD_POOL_OBSERVE_SECONDS)},
    "resync-jobs": {"task": "jobs.tasks.resync_jobs", "schedule": timedelta(seconds=DOCKYARD_RESYNC_SECONDS)},
    "resync-endpoints": {"task": "endpoints.tasks.resync_endpoints", "schedule": timedelta(seconds=DOCKYARD_RESYNC_SECONDS)},
    "observe-instances": {"task": "compute.tasks.observe_compute_instances",
                          "schedule": timedelta(seconds=DOCKYARD_INSTANCE_PROBE_SECONDS)},
    "observe-local-instances": {"task": "compute.tasks.observe_local_compute_instances",
                                "schedule": timedelta(seconds=DOCKYARD_INSTANCE_PROBE_SECONDS)},
    "instance-schedules": {"task": "compute.tasks.fire_instance_schedules",
                           "schedule": timedelta(seconds=DOCKYARD_SCHEDULE_SECONDS)},
    "collect-artifacts": {"task": "assets.tasks.collect_artifacts", "schedule": timedelta(seconds=DOCKYARD_ARTIFACT_COLLECT_SECONDS)},
}

# Dockyard
# Server-wide switch for `compute: local` (sandboxed jobs and deployments on the worker's host). Even when on,
# each workspace stays without it until a staff user enables it there (Workspace.local_compute_enabled, off by
# default); when off, nobody can use or enable it. Off by default in production as a second lock.
DOCKYARD_LOCAL_COMPUTE = env_bool("DOCKYARD_LOCAL_COMPUTE", not PRODUCTION)
# Who may create workspaces (and so attach compute to one): `staff`, or `anyone` signed in.
DOCKYARD_WORKSPACE_CREATORS = os.environ.get("DOCKYARD_WORKSPACE_CREATORS") or ("staff" if PRODUCTION else "anyone")
if DOCKYARD_WORKSPACE_CREATORS not in ("staff", "anyone"):
    raise ImproperlyConfigured("DOCKYARD_WORKSPACE_CREATORS must be 'staff' or 'anyone'.")
# Member adds naming no addable user, per user and hour, before further adds get 429: names are not to be guessed.
DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR = int(os.environ.get("DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR", "20"))
# How long the one-time link of a user staff created stays good for setting the first password.
DOCKYARD_INVITATION_HOURS = int(os.environ.get("DOCKYARD_INVITATION_HOURS", "72"))
# Addresses in link-local / cloud-metadata ranges are refused as compute addresses (SSRF) unless allowed.
DOCKYARD_ALLOW_LINK_LOCAL = env_bool("DOCKYARD_ALLOW_LINK_LOCAL", False)
# Loopback API servers and SSH hosts (and plain http:// to them) reach Dockyard's own host: a laptop's kind or
# `kubectl proxy`, the tests' fake API server. Refused in production unless allowed.
DOCKYARD_ALLOW_LOOPBACK = env_bool("DOCKYARD_ALLOW_LOOPBACK", not PRODUCTION)

# Path prefixes served by ASGI apps of their own in front of Django (controlplane/asgi.py): the browser proxy to
# compute instances' JupyterLab and VS Code (HTTP streamed, WebSockets relayed), /instances/<ws>/<name>/<app>/.
DOCKYARD_ASGI_MOUNTS = {"/instances/": "compute.instance_proxy.app.application"}

# Limits
# Parsers have limits (DESIGN.md §6): API bodies, scoring bodies, nesting, any one string, a stored spec.
DOCKYARD_MAX_BODY_BYTES = int(os.environ.get("DOCKYARD_MAX_BODY_BYTES", str(2 * 1024 * 1024)))
DOCKYARD_MAX_SCORE_BYTES = int(os.environ.get("DOCKYARD_MAX_SCORE_BYTES", str(2 * 1024 * 1024)))
DOCKYARD_MAX_DEPTH = int(os.environ.get("DOCKYARD_MAX_DEPTH", "32"))
DOCKYARD_MAX_STRING_CHARS = int(os.environ.get("DOCKYARD_MAX_STRING_CHARS", str(256 * 1024)))
# Django's own check on form bodies, never below ours (the middleware answers first, in the error shape).
DATA_UPLOAD_MAX_MEMORY_SIZE = max(DOCKYARD_MAX_BODY_BYTES, DOCKYARD_MAX_SCORE_BYTES)
# The studio's scripts, styles and fonts are its own files; htmx and Bootstrap need no inline script or eval.
# Style attributes stay allowed (the traffic bar's widths); they cannot run script.
DOCKYARD_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI's page carries an inline <style> block; its script is a file (drf-spectacular serves it at ?script).
DOCKYARD_CSP_DOCS_PREFIX = "/api/v1/docs/"
DOCKYARD_CSP_DOCS = DOCKYARD_CSP.replace("style-src 'self';", "style-src 'self' 'unsafe-inline';")

# Artifacts (assets/): content-addressed blobs and folder snapshots behind Django's storage API, storage "artifacts".
# The embedded default is a folder under var/; DOCKYARD_ARTIFACT_S3_BUCKET selects any S3-compatible store instead.
DOCKYARD_ARTIFACT_DIR = Path(os.environ.get("DOCKYARD_ARTIFACT_DIR", VAR_DIR / "artifacts"))
DOCKYARD_ARTIFACT_S3_BUCKET = os.environ.get("DOCKYARD_ARTIFACT_S3_BUCKET", "")


def artifact_storage() -> dict:
    """The "artifacts" storage: S3 (django-storages) when a bucket is set, else the filesystem (owner-only files)."""
    if not DOCKYARD_ARTIFACT_S3_BUCKET:
        return {"BACKEND": "django.core.files.storage.FileSystemStorage",
                "OPTIONS": {"location": str(DOCKYARD_ARTIFACT_DIR), "file_permissions_mode": 0o600, "directory_permissions_mode": 0o700}}
    endpoint = os.environ.get("DOCKYARD_ARTIFACT_S3_ENDPOINT_URL") or None
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": DOCKYARD_ARTIFACT_S3_BUCKET,
        "endpoint_url": endpoint,
        "region_name": os.environ.get("DOCKYARD_ARTIFACT_S3_REGION") or None,
        "access_key": os.environ.get("DOCKYARD_ARTIFACT_S3_ACCESS_KEY_ID") or None,
        "secret_key": os.environ.get("DOCKYARD_ARTIFACT_S3_SECRET_ACCESS_KEY") or None,
        "location": os.environ.get("DOCKYARD_ARTIFACT_S3_PREFIX", ""),
        # MinIO, Ceph and most self-hosted stores want bucket names in the path, not in the host name
        "addressing_style": os.environ.get("DOCKYARD_ARTIFACT_S3_ADDRESSING_STYLE") or ("path" if endpoint else None),
        "default_acl": None,
        "file_overwrite": True,  # keys are content hashes or unique part names; a PUT replaces an object atomically
    }}


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "artifacts": artifact_storage(),
}
# Bounds of what a workspace stores: one blob, one snapshot (bytes, files, path depth and length), one request body
# of a blob chunk or an uploads/ archive (the other API bodies keep DOCKYARD_MAX_BODY_BYTES).
DOCKYARD_ARTIFACT_MAX_BYTES = int(os.environ.get("DOCKYARD_ARTIFACT_MAX_BYTES", str(1024**3)))
DOCKYARD_ARTIFACT_BODY_MAX_BYTES = int(os.environ.get("DOCKYARD_ARTIFACT_BODY_MAX_BYTES", str(256 * 1024**2)))
DOCKYARD_SNAPSHOT_MAX_BYTES = int(os.environ.get("DOCKYARD_SNAPSHOT_MAX_BYTES", str(1024**3)))
DOCKYARD_SNAPSHOT_MAX_FILES = int(os.environ.get("DOCKYARD_SNAPSHOT_MAX_FILES", "10000"))
DOCKYARD_SNAPSHOT_MAX_DEPTH = int(os.environ.get("DOCKYARD_SNAPSHOT_MAX_DEPTH", "32"))
DOCKYARD_SNAPSHOT_MAX_PATH_CHARS = int(os.environ.get("DOCKYARD_SNAPSHOT_MAX_PATH_CHARS", "1024"))
# Pods fetch uploaded code with a signed URL naming one snapshot (GET /api/v1/artifacts/fetch/<token>/): how long one
# stays good, where the cluster reaches Dockyard, and the small public image whose wget and tar fetch it.
DOCKYARD_ARTIFACT_URL_SECONDS = int(os.environ.get("DOCKYARD_ARTIFACT_URL_SECONDS", "3600"))
DOCKYARD_EXTERNAL_URL = os.environ.get("DOCKYARD_EXTERNAL_URL", "http://127.0.0.1:8000")
DOCKYARD_FETCH_IMAGE = os.environ.get("DOCKYARD_FETCH_IMAGE", "busybox:1.37.0")
# Collection: an upload no chunk came to for this long is abandoned; a snapshot or blob nothing needs is deleted only
# once it is older than the grace (a client between uploading and naming it in a job is not robbed).
DOCKYARD_UPLOAD_ABANDON_SECONDS = int(os.environ.get("DOCKYARD_UPLOAD_ABANDON_SECONDS", str(24 * 3600)))
DOCKYARD_ARTIFACT_GRACE_SECONDS = int(os.environ.get("DOCKYARD_ARTIFACT_GRACE_SECONDS", str(24 * 3600)))

# Logging: one line per record to stderr; request bodies are never logged.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # httpx logs each request's URL at INFO: the browser proxy's upstream URLs carry a compute instance's token
    # (?token=, the only way through the API server), which must not reach a log.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "httpx": {"level": "WARNING"},
                "asyncssh": {"level": "WARNING"}},
}

# Local jobs: one folder per job (log, pid, exit code, working directory) on the worker's host.
DOCKYARD_JOB_DIR = Path(os.environ.get("DOCKYARD_JOB_DIR", VAR_DIR / "jobs"))
# A running job whose worker has not looked at it for this long is picked up by another look (resync, worker start).
DOCKYARD_JOB_STALE_SECONDS = int(os.environ.get("DOCKYARD_JOB_STALE_SECONDS", "10"))
# A `logs?follow=true` stream ends after this long (a `timeout` event); clients reconnect with Last-Event-ID.
DOCKYARD_LOG_FOLLOW_SECONDS = int(os.environ.get("DOCKYARD_LOG_FOLLOW_SECONDS", "3600"))
# Local jobs and deployments run in a bubblewrap sandbox (compute/runners/sandbox.py) as this uid; unset: nobody
# (65534) for a root worker, the worker's own uid otherwise (then isolated by namespaces alone).
DOCKYARD_SANDBOX_UID = int(os.environ["DOCKYARD_SANDBOX_UID"]) if os.environ.get("DOCKYARD_SANDBOX_UID") else None
# Give every sandbox a network of its own (slirp4netns; never the host's loopback); per workspace: local_network_enabled.
DOCKYARD_SANDBOX_NETWORK = env_bool("DOCKYARD_SANDBOX_NETWORK", False)
# Folders whose contents local deployments and local jobs may use as code or model (read-only), separated by ":". Empty: none.
DOCKYARD_LOCAL_PATHS = [Path(path) for path in os.environ.get("DOCKYARD_LOCAL_PATHS", "").split(os.pathsep) if path]
# A local job's `code:` folder is copied into its working folder before it starts, within these bounds (a job past
# them fails, saying which): the copy is the tenant's, so it must not be a way to fill the worker's disk.
DOCKYARD_JOB_CODE_MAX_BYTES = int(os.environ.get("DOCKYARD_JOB_CODE_MAX_BYTES", str(256 * 1024 * 1024)))
DOCKYARD_JOB_CODE_MAX_FILES = int(os.environ.get("DOCKYARD_JOB_CODE_MAX_FILES", "10000"))
# A local job's https:// uri_file inputs are fetched by the worker (public addresses only) within these bounds.
DOCKYARD_JOB_INPUT_URL_MAX_BYTES = int(os.environ.get("DOCKYARD_JOB_INPUT_URL_MAX_BYTES", str(1024**3)))
DOCKYARD_JOB_INPUT_URL_SECONDS = int(os.environ.get("DOCKYARD_JOB_INPUT_URL_SECONDS", "600"))
# `jobs/{name}/outputs/` lists at most this many files of a local job's ./outputs folder.
DOCKYARD_JOB_OUTPUTS_MAX_LIST = int(os.environ.get("DOCKYARD_JOB_OUTPUTS_MAX_LIST", "5000"))
# Open `logs?follow=true` streams per user (counted in the cache, so Redis counts them across web processes); 429 beyond.
DOCKYARD_LOG_STREAMS_PER_USER = int(os.environ.get("DOCKYARD_LOG_STREAMS_PER_USER", "10"))
# Conda files of local jobs: realised in a sandbox of their own (with the network unless turned off here) and cached
# per workspace and conda file hash under this folder; DOCKYARD_ENVIRONMENT_PIP is JSON of pip's settings for them
# (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, PIP_TRUSTED_HOST): a mirror, or a wheel folder.
DOCKYARD_ENVIRONMENT_DIR = Path(os.environ.get("DOCKYARD_ENVIRONMENT_DIR", VAR_DIR / "environments"))
DOCKYARD_ENVIRONMENT_NETWORK = env_bool("DOCKYARD_ENVIRONMENT_NETWORK", False)
DOCKYARD_ENVIRONMENT_PIP = json.loads(os.environ.get("DOCKYARD_ENVIRONMENT_PIP", "{}"))

# Local online deployments: one folder per deployment (server log, pid) and the inference server's virtualenv.
DOCKYARD_DEPLOYMENT_DIR = Path(os.environ.get("DOCKYARD_DEPLOYMENT_DIR", VAR_DIR / "deployments"))
DOCKYARD_INFERENCE_VENV = Path(os.environ.get("DOCKYARD_INFERENCE_VENV", BASE_DIR / ".venv-inference"))
# The largest registered or uploaded model a deployment takes (written out in a local deployment's folder, or fetched
# into a pod's emptyDir); more is refused at `model` when the deployment is made.
DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES = int(os.environ.get("DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES", str(1024**3)))
DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES = int(os.environ.get("DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES", "10000"))
# The Gateway API Gateway that endpoints' HTTPRoutes attach to (in the compute's namespace).
DOCKYARD_GATEWAY = os.environ.get("DOCKYARD_GATEWAY", "dockyard")
