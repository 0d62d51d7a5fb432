"""Offline checks of the deployment files in deploy/: the image (Dockerfile), the Kubernetes manifests, the Prefect
work pool's base job template and the Prefect deployments.

No Kubernetes cluster, registry or Docker daemon is used. The manifests are checked against what the tools that
consume them accept: the Kubernetes API models of the ``kubernetes`` client (every field known, every value of the
right type), the Dask operator's own CRD schemas, ``dask_kubernetes.operator.make_cluster_spec`` (the DaskCluster
must be exactly its output plus named additions), prefect-kubernetes' job configuration (the base job template is
rendered the way the worker renders it) and the ``recluster`` flow's signature (read from its source, without
importing it). The names that tie the files together (image, namespace, service accounts, Secret, work pool, cluster
name) must agree everywhere.
"""

# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import ast
import asyncio
import copy
import importlib
import importlib.util
import inspect
import json
import re
import tomllib
import uuid
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
#: yaml.safe_load's loader, in C where PyYAML has it.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"
DOCKERFILE = DEPLOY / "Dockerfile"
WORK_POOL = DEPLOY / "prefect" / "work-pool.json"
PREFECT_YAML = DEPLOY / "prefect" / "prefect.yaml"

#: The names that must be the same in every file.
IMAGE = "ghcr.io/lowdens/lowdens-dask:0.1.0"
NAMESPACE = "lowdens"
POOL = "lowdens-k8s"
WORKER_SA = "prefect-worker"
FLOW_SA = "lowdens-flow"
STORAGE_SECRET = "lowdens-storage"
FLOW_ENTRYPOINT = "lowdens_pipelines.flows.recluster"

#: What deploy/kubernetes/daskcluster.yaml adds to make_cluster_spec's output: (path, check of the value).
DASKCLUSTER_ADDITIONS = {
    ("metadata", "namespace"): lambda value: value == NAMESPACE,
    ("metadata", "labels"): lambda value: isinstance(value, dict) and all(isinstance(v, str) for v in value.values()),
}
#: KubeCluster settings in which the per-run cluster of prefect.yaml differs from the standing DaskCluster.
PER_RUN_ONLY = {"name", "idle_timeout"}
#: Commands the DaskCluster containers run that the image must provide (the Dockerfile's build checks them).
CLUSTER_COMMANDS = {"dask", "dask-scheduler"}

#: Permissions each service account needs: (API group, resource, verb).
WORKER_NEEDS = [("batch", "jobs", verb) for verb in ("create", "get", "list", "watch", "patch", "delete")] + [
    ("", resource, verb) for resource in ("pods", "pods/log") for verb in ("get", "list", "watch")
]
FLOW_NEEDS = (
    [
        ("kubernetes.dask.org", resource, verb)
        for resource in ("daskclusters", "daskworkergroups", "daskautoscalers")
        for verb in ("create", "get", "list", "watch", "patch", "delete")
    ]
    + [("kubernetes.dask.org", "daskworkergroups/scale", "patch")]
    + [("", resource, verb) for resource in ("pods", "pods/log", "services") for verb in ("get", "list", "watch")]
)


# ------------------------------------------------------------------------------------------------------ loading
def load_documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=SafeLoader) if doc is not None]


def manifests() -> list[tuple[str, dict]]:
    return [(path.name, doc) for path in sorted(K8S.glob("*.yaml")) for doc in load_documents(path)]


def find(kind: str, name: str | None = None) -> list[dict]:
    return [doc for _, doc in manifests() if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]


def the(kind: str, name: str | None = None) -> dict:
    found = find(kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''} in {K8S}, found {len(found)}"
    return found[0]


def work_pool() -> dict:
    return json.loads(WORK_POOL.read_text())


def deployments() -> list[dict]:
    return yaml.load(PREFECT_YAML.read_text(), Loader=SafeLoader)["deployments"]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined, comments dropped."""
    lines, current = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        current += " " + line
        if current.endswith("\\"):
            current = current[:-1]
            continue
        lines.append(current.strip())
        current = ""
    assert not current, "Dockerfile ends inside a continued line"
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def images_in(value) -> list[str]:
    """Every string under an ``image`` key, anywhere in a document."""
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k == "image" and isinstance(v, str)]
        return found + [image for v in value.values() for image in images_in(v)]
    if isinstance(value, list):
        return [image for item in value for image in images_in(item)]
    return []


def secret_refs(value) -> set[str]:
    """Names of the Secrets referenced (secretKeyRef, secretRef) anywhere in a document."""
    if isinstance(value, dict):
        found = {value[k]["name"] for k in ("secretKeyRef", "secretRef") if isinstance(value.get(k), dict)}
        return found.union(*(secret_refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(secret_refs(item) for item in value))
    return set()


# ------------------------------------------------------------------------------------- Kubernetes API schemas
def k8s_problems(value, type_name: str, path: str) -> list[str]:
    """Fields unknown to the Kubernetes API model ``type_name`` (a ``kubernetes.client`` model name or one of its
    type strings) and values of the wrong type, as messages; empty when the document fits the model."""
    client = pytest.importorskip("kubernetes.client")
    if match := re.fullmatch(r"[Ll]ist\[(.+)\]", type_name):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {value!r}"]
        return [p for i, item in enumerate(value) for p in k8s_problems(item, match[1], f"{path}[{i}]")]
    if match := re.fullmatch(r"[Dd]ict[\[(]str, (.+)[\])]", type_name):
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping, got {value!r}"]
        return [p for k, item in value.items() for p in k8s_problems(item, match[1], f"{path}.{k}")]
    if type_name == "object":  # int-or-string and free-form fields
        return []
    primitive = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str, "date": str}
    if type_name in primitive:
        wrong = not isinstance(value, primitive[type_name]) or (type_name == "int" and isinstance(value, bool))
        return [f"{path}: expected {type_name}, got {value!r}"] if wrong else []
    model = getattr(client, type_name)
    if not isinstance(value, dict):
        return [f"{path}: expected a {type_name} mapping, got {value!r}"]
    attribute = {key: attr for attr, key in model.attribute_map.items()}
    problems = [f"{path}.{key}: unknown field of {type_name}" for key in value if key not in attribute]
    for key, item in value.items():
        if key in attribute:
            problems += k8s_problems(item, model.openapi_types[attribute[key]], f"{path}.{key}")
    return problems


def operator_crd(kind: str) -> dict:
    """The Dask operator's CRD for ``kind`` (the fully resolved one its Helm chart installs), from the installed
    dask-kubernetes."""
    dask_kubernetes = pytest.importorskip("dask_kubernetes")
    crds = Path(dask_kubernetes.__file__).parent / "operator" / "deployment" / "helm" / "dask-kubernetes-operator"
    path = crds / "crds" / f"{kind.lower()}.yaml"
    if not path.exists():
        pytest.skip(f"this dask-kubernetes has no resolved CRD at {path}")
    return yaml.load(path.read_text(), Loader=SafeLoader)


def schema_problems(value, schema: dict, path: str) -> list[str]:
    """Fields a structural (OpenAPI v3) schema does not declare; Kubernetes would drop them silently."""
    if isinstance(value, dict) and "properties" in schema:
        if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("additionalProperties"):
            return []
        problems = [f"{path}.{key}: unknown field" for key in value if key not in schema["properties"]]
        for key, item in value.items():
            if key in schema["properties"]:
                problems += schema_problems(item, schema["properties"][key], f"{path}.{key}")
        return problems
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        return [p for k, v in value.items() for p in schema_problems(v, schema["additionalProperties"], f"{path}.{k}")]
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [p for i, v in enumerate(value) for p in schema_problems(v, schema["items"], f"{path}[{i}]")]
    return []


def check_against_crd(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    crd = operator_crd(doc["kind"])
    assert crd["spec"]["names"]["kind"] == doc["kind"]
    group, version = doc["apiVersion"].split("/")
    assert crd["spec"]["group"] == group
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = served["schema"]["openAPIV3Schema"]
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    assert not errors, errors
    assert set(doc) <= {"apiVersion", "kind", "metadata", "spec"}
    problems = schema_problems(doc["spec"], schema["properties"]["spec"], "spec")
    assert not problems, problems


# ---------------------------------------------------------------------------------------------------- RBAC
def allows(rules: list[dict], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule.get("apiGroups", []) and resource in rule.get("resources", []) and verb in rule.get("verbs", [])
        for rule in rules
    )


def rules_of(service_account: str) -> list[dict]:
    """The rules of every Role bound to ``service_account`` (in the namespace) by a RoleBinding."""
    rules = []
    for binding in find("RoleBinding"):
        subjects = binding.get("subjects", [])
        if {"kind": "ServiceAccount", "name": service_account, "namespace": NAMESPACE} in subjects:
            ref = binding["roleRef"]
            assert (ref["apiGroup"], ref["kind"]) == ("rbac.authorization.k8s.io", "Role"), ref
            rules += the("Role", ref["name"])["rules"]
    return rules


# --------------------------------------------------------------------------------------------- the DaskCluster
def cluster_settings(doc: dict) -> dict:
    """The make_cluster_spec arguments that a DaskCluster document was made with, read from its worker (and, for
    the service type and Jupyter, its scheduler)."""
    worker = doc["spec"]["worker"]
    (container,) = worker["spec"]["containers"]
    args = container["args"]
    assert "--name" in args, f"the worker args {args} lack make_worker_spec's '--name $(DASK_WORKER_NAME)'"
    scheduler = doc["spec"]["scheduler"]
    return {
        "name": doc["metadata"]["name"],
        "image": container["image"],
        "n_workers": worker["replicas"],
        "resources": container["resources"],
        "env": container["env"],
        "worker_command": " ".join(args[: args.index("--name")]),
        "idle_timeout": doc["spec"]["idleTimeout"],
        "scheduler_service_type": scheduler["service"]["type"],
        "jupyter": "--jupyter" in scheduler["spec"]["containers"][0]["args"],
    }


def test_every_file_parses_and_is_a_kubernetes_object():
    files = sorted(K8S.glob("*.yaml"))
    assert {path.name for path in files} >= {
        "namespace.yaml",
        "daskcluster.yaml",
        "daskautoscaler.yaml",
        "prefect-worker.yaml",
    }
    for path in files:
        docs = load_documents(path)
        assert docs, f"{path.name} is empty"
        for doc in docs:
            assert isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str), path.name
            assert isinstance(doc["metadata"]["name"], str) and doc["metadata"]["name"], path.name
    assert load_documents(PREFECT_YAML)
    assert work_pool()


def test_namespace_is_the_same_everywhere():
    assert the("Namespace", NAMESPACE)
    for filename, doc in manifests():
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == NAMESPACE, f"{filename}: {doc['kind']} {doc['metadata']}"
    for binding in find("RoleBinding"):
        assert all(subject.get("namespace") == NAMESPACE for subject in binding["subjects"])
    assert work_pool()["variables"]["properties"]["namespace"]["default"] == NAMESPACE
    for deployment in deployments():
        assert deployment["work_pool"]["job_variables"]["namespace"] == NAMESPACE
        kwargs = deployment["parameters"].get("cluster", {}).get("cluster_kwargs")
        if kwargs is not None:
            assert kwargs["namespace"] == NAMESPACE


def test_the_image_is_the_same_everywhere():
    images = [image for _, doc in manifests() for image in images_in(doc)]
    images.append(work_pool()["variables"]["properties"]["image"]["default"])
    images += [image for deployment in deployments() for image in images_in(deployment)]
    assert len(images) >= 6
    assert set(images) == {IMAGE}, images
    # The README builds and pushes that tag, from the repository root, with this Dockerfile.
    assert f"docker build -f deploy/Dockerfile -t {IMAGE} ." in (DEPLOY / "README.md").read_text()


def test_core_objects_fit_the_kubernetes_api():
    problems = []
    for filename, doc in manifests():
        group_version, kind = doc["apiVersion"], doc["kind"]
        if group_version.startswith("kubernetes.dask.org/"):
            continue
        assert group_version.rsplit("/", 1)[-1] == "v1", f"{filename}: {group_version}"
        problems += k8s_problems(doc, f"V1{kind}", f"{filename}:{kind}/{doc['metadata']['name']}")
    assert not problems, "\n".join(problems)


def test_k8s_check_catches_unknown_fields_and_wrong_types():
    deployment = copy.deepcopy(the("Deployment", WORKER_SA))
    deployment["spec"]["template"]["spec"]["containers"][0]["argz"] = ["x"]
    deployment["spec"]["replicas"] = "1"
    assert sorted(k8s_problems(deployment, "V1Deployment", "d")) == [
        "d.spec.replicas: expected int, got '1'",
        "d.spec.template.spec.containers[0].argz: unknown field of V1Container",
    ]


def test_daskcluster_is_make_cluster_spec_output_plus_named_additions():
    operator = pytest.importorskip("dask_kubernetes.operator")
    committed = the("DaskCluster")
    assert committed["apiVersion"] == "kubernetes.dask.org/v1"
    settings = cluster_settings(committed)
    assert settings["image"] == IMAGE
    expected = operator.make_cluster_spec(**settings)

    remainder = copy.deepcopy(committed)
    for path, valid in DASKCLUSTER_ADDITIONS.items():
        parent = remainder
        for key in path[:-1]:
            parent = parent[key]
        assert path[-1] in parent, f"the documented addition {'.'.join(path)} is missing"
        assert valid(parent.pop(path[-1])), f"bad value for {'.'.join(path)}"
    assert remainder == expected
    # What the comparison implies, spelt out: the scheduler runs the same image, and its Service selects this
    # cluster's scheduler.
    scheduler = committed["spec"]["scheduler"]
    assert scheduler["spec"]["containers"][0]["image"] == IMAGE
    assert scheduler["service"]["selector"]["dask.org/cluster-name"] == committed["metadata"]["name"]


def test_daskcluster_comparison_can_fail():
    """The comparison above is not vacuous: a changed scheduler field (one not read back as a setting) or an
    unlisted addition breaks it."""
    operator = pytest.importorskip("dask_kubernetes.operator")
    for change in (
        lambda doc: doc["spec"]["scheduler"]["spec"]["containers"][0].update(image="other:1"),
        lambda doc: doc["spec"]["scheduler"]["spec"]["containers"][0].update(args=["dask", "scheduler"]),
        lambda doc: doc["spec"]["scheduler"]["spec"]["containers"][0]["resources"]["limits"].update(cpu="2"),
        lambda doc: doc["spec"]["scheduler"]["spec"]["containers"][0]["env"].pop(),
        lambda doc: doc["spec"]["worker"]["spec"].update(nodeSelector={"pool": "dask"}),
        lambda doc: doc["metadata"].update(annotations={"a": "b"}),
    ):
        # A JSON round trip, not deepcopy: the file shares env and resources between worker and scheduler (YAML
        # anchors), and a change to one must not reach the other.
        doc = json.loads(json.dumps(the("DaskCluster")))
        change(doc)
        settings = cluster_settings(doc)
        for path in DASKCLUSTER_ADDITIONS:
            doc[path[0]].pop(path[1])
        assert doc != operator.make_cluster_spec(**settings)


def test_dask_resources_fit_the_operator_crds():
    cluster = the("DaskCluster")
    check_against_crd(cluster)
    autoscaler = the("DaskAutoscaler")
    check_against_crd(autoscaler)
    # The checks can fail: a wrong type (schema) and a misspelt field (which Kubernetes would drop silently).
    broken = copy.deepcopy(autoscaler)
    broken["spec"]["minimum"] = "1"
    with pytest.raises(AssertionError, match="is not of type 'integer'"):
        check_against_crd(broken)
    broken = copy.deepcopy(cluster)
    broken["spec"]["worker"]["spec"]["containers"][0]["resource"] = {}
    with pytest.raises(AssertionError, match=r"spec\.worker\.spec\.containers\[0\]\.resource: unknown field"):
        check_against_crd(broken)


def test_autoscaler_scales_the_cluster():
    cluster, autoscaler = the("DaskCluster"), the("DaskAutoscaler")
    assert autoscaler["spec"]["cluster"] == cluster["metadata"]["name"]
    assert 0 < autoscaler["spec"]["minimum"] <= cluster["spec"]["worker"]["replicas"] <= autoscaler["spec"]["maximum"]


def test_prefect_worker_deployment():
    deployment = the("Deployment", WORKER_SA)
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["serviceAccountName"] == WORKER_SA
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["spec"]["containers"]
    assert container["image"] == IMAGE
    command = container.get("command", []) + container["args"]
    assert command[:3] == ["prefect", "worker", "start"]
    options = {command[i]: command[i + 1] for i in range(3, len(command) - 1) if command[i].startswith("--")}
    assert options["--pool"] == POOL
    assert options["--type"] == "kubernetes"
    if "--with-healthcheck" in command:
        assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": 8080}

    env = {item["name"]: item for item in container["env"]}
    api_url = env["PREFECT_API_URL"]
    if "value" in api_url:
        url = api_url["value"]
    else:
        ref = api_url["valueFrom"]["configMapKeyRef"]
        url = the("ConfigMap", ref["name"])["data"][ref["key"]]
    assert re.fullmatch(r"https?://\S+/api(/accounts/\S+/workspaces/\S+)?", url), url
    # The observer watches this namespace only (its Role is namespaced).
    assert env["PREFECT_INTEGRATIONS_KUBERNETES_OBSERVER_NAMESPACES"]["value"] == NAMESPACE


def test_rbac_lets_the_worker_run_jobs_and_the_flows_run_dask_clusters():
    assert the("ServiceAccount", WORKER_SA) and the("ServiceAccount", FLOW_SA)
    worker_rules, flow_rules = rules_of(WORKER_SA), rules_of(FLOW_SA)
    missing = [need for need in WORKER_NEEDS if not allows(worker_rules, *need)]
    assert not missing, f"{WORKER_SA} lacks {missing}"
    missing = [need for need in FLOW_NEEDS if not allows(flow_rules, *need)]
    assert not missing, f"{FLOW_SA} lacks {missing}"
    # Least privilege: no wildcards, the flows cannot start Jobs and the worker cannot touch Dask clusters.
    for role in find("Role"):
        for rule in role["rules"]:
            assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], role["metadata"]["name"]
    assert not allows(flow_rules, "batch", "jobs", "create")
    assert not allows(worker_rules, "kubernetes.dask.org", "daskclusters", "create")


def test_dockerfile():
    instructions = dockerfile_instructions()
    froms = [args for op, args in instructions if op == "FROM"]
    assert len(froms) == 1 and re.fullmatch(r"python:3\.11[\w.-]*(@sha256:[0-9a-f]{64})?", froms[0]), froms
    assert "slim" in froms[0]

    # The files the package build needs (pyproject's readme, license files and package folders) are copied ...
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir = project["tool"]["setuptools"].get("package-dir", {})
    folders = {
        package_dir.get(name.split(".")[0], name.split(".")[0]) for name in project["tool"]["setuptools"]["packages"]
    }
    needed = {"pyproject.toml", project["project"]["readme"], *project["project"]["license-files"], *folders}
    copies = [args.split() for op, args in instructions if op == "COPY"]
    sources = {source.rstrip("/") for args in copies for source in args[:-1] if not source.startswith("--")}
    assert needed <= sources, f"not copied into the image: {needed - sources}"
    destination = {source.rstrip("/"): args[-1] for args in copies for source in args[:-1]}["pyproject.toml"]
    # ... and installed, with the Kubernetes integrations, in one pip call (one joint resolve) within the pins of
    # deploy/constraints.txt (tests/system/test_image.py checks them), that is then checked.
    runs = [args for op, args in instructions if op == "RUN"]
    (install,) = [run for run in runs if "pip install" in run]
    assert re.search(rf"pip install (-c|--constraint) \S+ {re.escape(destination.rstrip('/'))} ", install), install
    for package in ("dask-kubernetes", "prefect-kubernetes"):
        assert re.search(rf"\s{package}\s", install), f"{package} is not installed"
    assert "pip check" in install
    ignore_file = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    ignored = {line.strip().strip("/") for line in ignore_file if line.strip() and not line.startswith("#")}
    assert not needed & ignored, needed & ignored

    # The commands the DaskCluster containers run exist in the image: the build runs each legacy command.
    cluster = the("DaskCluster")
    commands = {c["args"][0] for part in ("scheduler", "worker") for c in cluster["spec"][part]["spec"]["containers"]}
    assert commands <= CLUSTER_COMMANDS
    for command in commands - {"dask"}:
        assert any(f"{command} --help" in run for run in runs), f"the image build does not check for {command}"

    env = " ".join(args for op, args in instructions if op == "ENV")
    assert "PYTHONUNBUFFERED=1" in env and "PREFECT_HOME=" in env
    # Non-root, with a numeric UID (runAsNonRoot: true can only verify a numeric one).
    user = [args for op, args in instructions if op == "USER"][-1]
    assert re.fullmatch(r"[1-9]\d*(:[1-9]\d*)?", user), user
    assert any(op == "CMD" for op, _ in instructions)


# ------------------------------------------------------------------------------------------------ Prefect
def placeholders(value) -> set[str]:
    if isinstance(value, str):
        return set(re.findall(r"\{\{\s*([\w.]+)\s*\}\}", value))
    if isinstance(value, dict):
        return set().union(*(placeholders(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(placeholders(v) for v in value))
    return set()


def render_job_configuration(template: dict, values: dict, renderer: str) -> dict:
    """The job configuration built from the base job template and job variables: by prefect-kubernetes' own
    KubernetesWorkerJobConfiguration (what the worker does), or by Prefect's templating alone, with the variables'
    non-null defaults (unset placeholders are removed, as the worker does)."""
    if renderer == "prefect-kubernetes":
        worker = pytest.importorskip("prefect_kubernetes.worker")
        # No block or Prefect-variable references in the template, so the client is never used.
        configure = worker.KubernetesWorkerJobConfiguration.from_template_and_values
        config = asyncio.run(configure(template, values, client=object()))
        return {"namespace": config.namespace, "job_manifest": config.job_manifest}
    from prefect.utilities.templating import apply_values

    properties = template["variables"]["properties"].items()
    defaults = {k: v["default"] for k, v in properties if v.get("default") is not None}
    return apply_values(template["job_configuration"], {**defaults, **values})


@pytest.mark.parametrize("renderer", ["prefect-kubernetes", "prefect-templating"])
def test_work_pool_base_job_template(renderer):
    template = work_pool()
    assert set(template) == {"job_configuration", "variables"}
    variables = template["variables"]["properties"]
    assert variables["image"]["default"] == IMAGE
    assert variables["namespace"]["default"] == NAMESPACE
    assert variables["service_account_name"]["default"] == FLOW_SA
    config = template["job_configuration"]
    assert placeholders(config) <= set(variables), placeholders(config) - set(variables)
    manifest = config["job_manifest"]
    assert manifest["metadata"]["namespace"] == "{{ namespace }}"
    pod = manifest["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "{{ service_account_name }}"
    (container,) = pod["containers"]
    assert container["image"] == "{{ image }}"

    rendered = render_job_configuration(template, {}, renderer)
    assert rendered["namespace"] == NAMESPACE
    job = rendered["job_manifest"]
    problems = k8s_problems(job, "V1Job", "job_manifest")
    assert not problems, "\n".join(problems)
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == FLOW_SA
    assert pod["containers"][0]["image"] == IMAGE
    assert secret_refs(job) == {STORAGE_SECRET}
    # The flows' object-store credentials come from the same Secret as the Dask pods'.
    assert secret_refs(the("DaskCluster")) == {STORAGE_SECRET}


def test_work_pool_template_keeps_prefect_kubernetes_structure():
    """Ours is prefect-kubernetes' default template with other defaults, the Secret, a pod security context, and
    ``completions``/``parallelism`` moved from the pod spec (where the default has them, and Kubernetes drops them)
    to the Job spec."""
    worker = pytest.importorskip("prefect_kubernetes.worker")
    default = worker.KubernetesWorker.get_default_base_job_template()
    ours = work_pool()
    assert set(ours["job_configuration"]) == set(default["job_configuration"])
    assert placeholders(ours["job_configuration"]) == placeholders(default["job_configuration"])
    ours_vars, default_vars = ours["variables"]["properties"], default["variables"]["properties"]
    assert set(ours_vars) == set(default_vars)
    for name, schema in default_vars.items():
        assert {k: v for k, v in ours_vars[name].items() if k != "default"} == {
            k: v for k, v in schema.items() if k != "default"
        }, name
    assert ours["variables"].get("definitions") == default["variables"].get("definitions")


def recluster_signature() -> tuple[set[str], set[str], set[str]]:
    """(parameters, required parameters, CLUSTER_KEYS) of the ``recluster`` flow, read from the source of
    lowdens_pipelines.flows (importing it would start Prefect and Dask)."""
    module, function = FLOW_ENTRYPOINT.rsplit(".", 1)
    package, submodule = module.split(".")
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations
    tree = ast.parse((Path(spec.submodule_search_locations[0]) / f"{submodule}.py").read_text())
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    (node,) = [n for n in tree.body if isinstance(n, functions) and n.name == function]
    (decorator,) = [d for d in node.decorator_list if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "flow"]
    assert {k.arg: ast.literal_eval(k.value) for k in decorator.keywords}.get("name") == "recluster"
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    names = {a.arg for a in args}
    n_required = len(node.args.posonlyargs + node.args.args) - len(node.args.defaults)
    required = {a.arg for a in (node.args.posonlyargs + node.args.args)[:n_required]}
    required |= {a.arg for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is None}
    keys = [
        ast.literal_eval(n.value)
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "CLUSTER_KEYS" for t in n.targets)
    ]
    return names, required, set(keys[0]) if keys else set()


def test_prefect_deployments():
    from prefect.client.schemas.schedules import CronSchedule

    project = yaml.load(PREFECT_YAML.read_text(), Loader=SafeLoader)
    assert project.get("build") is None and project.get("push") is None
    # The code is in the image: the pull step only moves to the image's working directory.
    (step,) = project["pull"]
    workdir = [args for op, args in dockerfile_instructions() if op == "WORKDIR"][-1]
    assert step == {"prefect.deployments.steps.set_working_directory": {"directory": workdir}}

    parameters, required, cluster_keys = recluster_signature()
    assert "cluster" in parameters and cluster_keys
    jsonschema = pytest.importorskip("jsonschema")
    variables_schema = work_pool()["variables"]
    schedules = 0
    for deployment in deployments():
        name = deployment["name"]
        assert deployment["entrypoint"] == FLOW_ENTRYPOINT, name
        assert deployment["work_pool"]["name"] == POOL, name
        job_variables = deployment["work_pool"]["job_variables"]
        jsonschema.validate(job_variables, variables_schema)
        assert set(job_variables) <= set(variables_schema["properties"]), name
        assert job_variables["image"] == IMAGE and job_variables["service_account_name"] == FLOW_SA
        given = deployment["parameters"]
        assert required <= set(given) <= parameters, (name, set(given) - parameters, required - set(given))
        assert set(given["cluster"]) <= cluster_keys, name
        # no relative local path, which a deployment's flow run refuses (issue 35, item 2): URLs or absolute paths
        from lowdens_pipelines.paths import refuse_relative_in_deployment

        refuse_relative_in_deployment(**{key: given.get(key) for key in ("input_path", "store", "true_labels")})
        assert "store" in given, f"{name}: the flow's default store, ./lowdens-runs, is relative"
        for schedule in deployment.get("schedules") or []:
            schedules += 1
            CronSchedule(cron=schedule["cron"], timezone=schedule.get("timezone"))
            assert schedule["cron"] == "0 2 * * *"
    assert schedules == 1


def test_per_run_cluster_matches_the_standing_cluster():
    """The nightly deployment's KubeCluster gets the standing DaskCluster's settings, except PER_RUN_ONLY."""
    operator = pytest.importorskip("dask_kubernetes.operator")
    from dask_kubernetes.operator.validation import validate_cluster_name

    (nightly,) = [d for d in deployments() if "cluster_class" in d["parameters"]["cluster"]]
    cluster = nightly["parameters"]["cluster"]
    module, cls = cluster["cluster_class"].rsplit(".", 1)
    assert getattr(importlib.import_module(module), cls) is operator.KubeCluster
    kwargs = dict(cluster["cluster_kwargs"])
    signature = inspect.signature(operator.KubeCluster).parameters
    assert set(kwargs) <= set(signature)
    assert kwargs.pop("namespace") == NAMESPACE
    standing = cluster_settings(the("DaskCluster"))
    # Every setting is given explicitly (KubeCluster's defaults differ: image, worker command, env, ...), except
    # jupyter, whose default (False) is a plain argument default.
    assert set(kwargs) - {"jupyter"} == set(standing) - {"jupyter"}, set(kwargs) ^ set(standing)
    per_run = {"jupyter": signature["jupyter"].default, **kwargs}
    assert {k: v for k, v in per_run.items() if k not in PER_RUN_ONLY} == {
        k: v for k, v in standing.items() if k not in PER_RUN_ONLY
    }
    assert per_run["idle_timeout"] > 0  # a leaked per-run cluster deletes itself
    # KubeCluster fills in "{uuid}" (10 characters) and checks the name the same way.
    name = kwargs["name"].format(user="lowdens", uuid=str(uuid.uuid4())[:10])
    validate_cluster_name(name)
    assert name != standing["name"]
    spec = operator.make_cluster_spec(**{**per_run, "name": name})
    committed = the("DaskCluster")
    assert spec["spec"]["worker"] == committed["spec"]["worker"]
    assert spec["spec"]["scheduler"]["spec"] == committed["spec"]["scheduler"]["spec"]
    adapt = cluster["adapt_kwargs"]
    assert 0 < adapt["minimum"] <= per_run["n_workers"] <= adapt["maximum"]


def test_standing_cluster_deployment_reaches_the_scheduler_service():
    cluster = the("DaskCluster")
    (standing,) = [d for d in deployments() if "address" in d["parameters"]["cluster"]]
    address = standing["parameters"]["cluster"]["address"]
    (port,) = [p["port"] for p in cluster["spec"]["scheduler"]["service"]["ports"] if p["name"] == "tcp-comm"]
    assert address == f"tcp://{cluster['metadata']['name']}-scheduler.{NAMESPACE}.svc.cluster.local:{port}"
