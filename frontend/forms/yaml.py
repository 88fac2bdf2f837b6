"""YAML in the studio: pasted text read as documents, and bodies and manifests written as people write them."""
import yaml

from controlplane.parsers import load_yaml_documents

MANIFEST_HEAD = ("apiVersion", "kind", "metadata", "spec")
SEVERAL = "this text holds several YAML documents"


class BlockDumper(yaml.SafeDumper):
    """YAML as people write it: multi-line strings (commands, scripts) as `|` blocks rather than escaped lines."""


def _represent_text(dumper: yaml.SafeDumper, text: str):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


BlockDumper.add_representer(str, _represent_text)


def as_yaml(document, *, text_blocks: bool = True, sort_keys: bool = False) -> str:
    """One document as YAML, keys in the order given; without `text_blocks`, multi-line strings stay quoted."""
    dumper = BlockDumper if text_blocks else yaml.SafeDumper
    return yaml.dump(document, Dumper=dumper, sort_keys=sort_keys, allow_unicode=True, width=100)


def _sorted(value):
    """Every mapping inside `value` with its keys in alphabetical order."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    return [_sorted(item) for item in value] if isinstance(value, list) else value


def manifests_yaml(manifests: list[dict]) -> str:
    """Kubernetes objects as one multi-document file, as `kubectl apply -f` takes them.

    The database hands JSON back in its own key order, so keys are put in kubectl's: apiVersion, kind, metadata, spec
    first, then alphabetical (as `kubectl get -o yaml` prints them).
    """
    documents = []
    for manifest in map(_sorted, manifests):
        documents.append({**{key: manifest[key] for key in MANIFEST_HEAD if key in manifest}, **manifest})
    return yaml.dump_all(documents, Dumper=BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def pasted_documents(text: str) -> list:
    """The non-empty documents of pasted text; ValueError (with line and column) for text that is not YAML."""
    try:
        return [document for document in load_yaml_documents(text) if document is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValueError(f"This is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}.") from None


def pasted_document(text: str, *, empty: str, several: str) -> object:
    """Pasted text as one body: `empty` when it holds none, `several` (with why) when it holds more than one."""
    documents = pasted_documents(text)
    if not documents:
        raise ValueError(empty)
    if len(documents) > 1:
        raise ValueError(f"{several} ({SEVERAL}).")
    return documents[0]
